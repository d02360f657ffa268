"""Poison what a SIM job allocates uninitialised, so an output no kernel wrote never reads as the golden.

SIM writes no outputs on a CPU host (docs/pypto.md §2). A wrapper's `torch.empty_like(x)` can get back
the block the golden just freed (a script's `golden.npu()` copy frees its source), and its stale bytes then
equal the golden bit for bit: an honest kernel looked like a fake pass (docs/realops.md §11). torch's own
switch fills every `torch.empty*`, `new_empty`, `empty_strided`, `resize_` and legacy `torch.Tensor(n)` with
NaN (floats) or the dtype's largest value (integers): the stand-in's `.npu()` copies are written in full by
the copy, so what they free is what the poison covers. Cost: one fill per explicit allocation (docs/realops.md
§11). `warn_only`: the switch also turns on deterministic algorithms, and a CPU op without one only warns.
"""
from __future__ import annotations

import torch


def install() -> None:
    """Fill uninitialised allocations for the rest of this job process."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]

