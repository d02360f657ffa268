"""Errors raised for unusable input or an unusable host (CLI exit code 2)."""


class SubmissionError(Exception):
    """The submission cannot be used as given; the message names the problem."""


class HostError(Exception):
    """This host cannot run the requested mode (e.g. NPU mode without an NPU)."""


NO_NPU_MESSAGE = "no NPU on this host: torch_npu/CANN not found"
