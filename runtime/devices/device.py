"""Where a job's tensors live: the CPU (SIM) or one NPU card. The harness's only device calls.

Everything else in the job process (inputs, golden, launch watch, compare, timing loop) is the
same code for both modes; the lines here are the ones the SIM tests cannot run (docs/npu.md §3).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from runtime.devices import host


class Device:
    """The CPU: SIM jobs."""

    name = "cpu"
    id: int | None = None

    def place(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def synchronize(self) -> None:
        """CPU work is synchronous."""


class Npu(Device):
    """One card, set as the process's current device."""

    def __init__(self, device_id: int):
        load_torch_npu()
        torch.npu.set_device(device_id)  # type: ignore[attr-defined]  (torch_npu registers torch.npu)
        self.id = device_id
        self.name = f"npu:{device_id}"

    def place(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to(self.name)

    def synchronize(self) -> None:
        torch.npu.synchronize()  # type: ignore[attr-defined]


def load_torch_npu() -> ModuleType:
    """Import the real torch_npu; refuse our test double unless our tests enabled it (runtime.devices.host)."""
    module = importlib.import_module("torch_npu")
    origin = Path(str(getattr(module, "__file__", "") or "")).resolve()
    if getattr(module, host.TEST_DOUBLE_MARKER, False) or host.is_test_double(origin):
        double = host.test_double_dir()
        if double is None or not origin.is_relative_to(double):
            raise RuntimeError(f"the torch_npu at {origin} is PTO Crosscheck's test double; refusing it "
                               f"(only our tests may load it, with {host.TEST_DOUBLE_ENV})")
    if origin.is_relative_to(Path(__file__).resolve().parent):
        raise RuntimeError(f"the torch_npu at {origin} is the runtime's CPU stand-in for SIM jobs; "
                           "NPU jobs need the real torch_npu")
    return module


_current: Device = Device()


def open_device(req: dict[str, Any]) -> Device:
    """Set up the job's device (NPU mode: import torch_npu, set the card) and remember it."""
    global _current
    _current = Npu(int(req["device_id"])) if req["mode"] == "npu" else Device()
    return _current


def current() -> Device:
    return _current
