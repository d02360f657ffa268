"""In the job process: which tensor storages hold data that came from a kernel launch (docs/SECURITY.md).

While the wrapper runs, a torch dispatch mode marks every storage an aten op writes from a marked
input; the instrumentation marks every storage a launch wrote. A returned tensor that no launch was
handed counts as the kernel's only when its storage is marked (runtime.job.child). Only storage
addresses are recorded, never data, and none is kept alive: a mark is dropped the moment its storage
is freed, so a later, unmarked tensor that gets the same address is not taken for a marked one.

Fail safe: a submission that leaves or disables the mode stops the marking, so its returned tensors
stay its own (suspect_fake_pass), never the other way round.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_leaves

from runtime.evidence import rawbytes


class KernelFlow(TorchDispatchMode):
    """Storages derived from what a launch wrote, by the aten ops that ran while the mode was on."""

    def __init__(self) -> None:
        super().__init__()
        self._storages: set[int] = set()  # addresses of live marked storages

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch would wrap __torch_dispatch__ to keep its compiler out, importing torch._dynamo on the first
        # op: seconds per job. Nothing here is compiled.
        return False

    def mark(self, t: torch.Tensor) -> None:
        if isinstance(t, torch.Tensor) and not t.is_meta:
            ptr = rawbytes.storage_ptr(t)
            if ptr not in self._storages:
                self._storages.add(ptr)
                # torch keeps one Python object per storage: it dies with the storage, and so does the mark.
                weakref.finalize(t.untyped_storage(), self._storages.discard, ptr)

    def marked(self, t: torch.Tensor) -> bool:
        return isinstance(t, torch.Tensor) and not t.is_meta and rawbytes.storage_ptr(t) in self._storages

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if self._storages and any(self.marked(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)):
            # The op's results, and whatever it wrote in place or through out=, now derive from the kernel.
            for t in tree_leaves(result):
                if isinstance(t, torch.Tensor):
                    self.mark(t)
        return result


_active: KernelFlow | None = None


def start() -> KernelFlow:
    """A fresh record for one wrapper call; enter it (`with`) around the call."""
    global _active
    _active = KernelFlow()
    return _active


def launched(written: list[torch.Tensor]) -> None:
    """The instrumentation's report of a launch: these arguments' storages hold what it wrote."""
    if _active is not None:
        for t in written:
            _active.mark(t)


def suspended() -> Any:
    """Every dispatch mode off across a launch: pypto's own torch calls run as they would without us."""
    return _disable_current_modes()
