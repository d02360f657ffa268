"""PTO Crosscheck's torch_npu TEST DOUBLE (tests/npu_double/README.md). Not torch_npu; never evidence.

Importing it:
- drops ASCEND_HOME_PATH from the environment, so the pypto imported next loads its CPU runtime stub
  (the double's CANN is a version file, not libraries);
- renames torch's PrivateUse1 backend to "npu" and registers `torch.npu`, so `npu:N` devices parse;
- maps every tensor placed on an npu device to the CPU (a TorchFunctionMode);
- reads NPU_DOUBLE_FAULTS ("3:507018,5:hang"): set_device on those cards fails or hangs.
"""
from __future__ import annotations

import os
import time
import types
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

CROSSCHECK_TEST_DOUBLE = True  # production refuses a torch_npu with this attribute (runtime/devices/device.py)
__version__ = "0.0.0+crosscheck.test.double"
DEVICE_COUNT = int(os.environ.get("NPU_DOUBLE_DEVICE_COUNT", "8"))
HANG_S = 10**6

os.environ.pop("ASCEND_HOME_PATH", None)


def _faults(text: str) -> dict[int, str]:
    faults = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        card, _, what = part.partition(":")
        faults[int(card)] = what.strip()
    return faults


FAULTS = _faults(os.environ.get("NPU_DOUBLE_FAULTS", ""))
_state = {"device": 0}


def _is_npu(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "npu"
    return isinstance(value, str) and value.split(":", 1)[0].strip() == "npu"


class _NpuIsCpu(TorchFunctionMode):
    """Any torch call given an npu device runs on the CPU instead."""

    def __torch_function__(self, func: Any, types_: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if func is torch.device:
            return func(*args, **kwargs)
        args = tuple("cpu" if _is_npu(a) else a for a in args)
        if _is_npu(kwargs.get("device")):
            kwargs["device"] = "cpu"
        return func(*args, **kwargs)


def set_device(device: Any) -> None:
    card = device.index if isinstance(device, torch.device) else int(str(device).rpartition(":")[2])
    if not 0 <= card < DEVICE_COUNT:
        raise RuntimeError(f"test double: invalid device id {card} (device count {DEVICE_COUNT})")
    fault = FAULTS.get(card)
    if fault == "hang":
        time.sleep(HANG_S)  # a card that never answers
    elif fault:
        raise RuntimeError(
            f"SetDevice: test double NPU function error: aclrtSetDevice({card}), error code is {fault}\n"
            f"ErrorTracking callback in, task_id = 0, stream_id = 2.\n"
            f"taskid: 0, streamid: 2, tid: {os.getpid()}, deviceid: {card}, retcode: {fault}")
    _state["device"] = card


def current_device() -> int:
    return _state["device"]


def device_count() -> int:
    return DEVICE_COUNT


def is_available() -> bool:
    return True


def synchronize(device: Any = None) -> None:
    """CPU work is already done."""


def current_stream(device: Any = None) -> Any:
    """pypto asks for the stream to launch a kernel on: the double has none."""
    raise RuntimeError("torch_npu test double: there is no NPU to launch a kernel on")


npu = types.ModuleType("torch_npu.npu")
for _fn in (set_device, current_device, device_count, is_available, synchronize, current_stream):
    setattr(npu, _fn.__name__, _fn)

torch.utils.rename_privateuse1_backend("npu")
torch._register_device_module("npu", npu)
_NpuIsCpu().__enter__()  # for the life of the process
