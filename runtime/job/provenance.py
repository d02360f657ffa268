"""Which launch a returned tensor came from (handed to it, a copy of its bytes, or the wrapper's own) and
the bytes the harness recompares outside the job (runtime.evidence.dumps); runtime.job.child calls it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from runtime.evidence import dumps, flow, instrument, row_slices


def before_launch(rec: instrument.Recorder, prov: dict[str, Any], out: torch.Tensor) -> torch.Tensor:
    before = _before(rec, prov, out)
    return out if before is None else before


def _before(rec: instrument.Recorder, prov: dict[str, Any], out: torch.Tensor) -> torch.Tensor | None:
    before = rec.launches[prov["launch"]].before[prov["arg"]]
    if before is not None and before.numel() < out.numel():
        whole = row_slices.before_whole(rec, out)
        return before if whole is None else whole
    return before


def provenance(rec: instrument.Recorder, out: torch.Tensor, kernel_flow: flow.KernelFlow) -> dict[str, Any]:
    """Which launch argument, if any, the returned tensor is, and whether that launch wrote it.

    The first launch holding its storage says what the kernel left there; the last one is where
    the bytes must still be as that launch left them (runtime.evidence.dumps checks it outside the job).
    """
    sid = instrument.storage_id(out)
    found = [(index, arg, launch) for index, launch in enumerate(rec.launches)
             for arg, storage in enumerate(launch.storages) if storage == sid]
    if found and not any(launch.written[arg] for _, arg, launch in found):
        # Not written where it was a launch argument (an input the wrapper overwrote after the launch):
        # its bytes may be a copy of what the kernel wrote elsewhere (docs/realops.md §7).
        found = copied_from(rec, out) or found
    elif not found and kernel_flow.marked(out):
        # A tensor no launch was handed counts as the kernel's only when torch computed it from what a
        # launch wrote (runtime.evidence.flow: `out.clone()`, `out.contiguous()`); otherwise it is the
        # wrapper's own however equal its bytes (the dual-path fake pass, docs/realops.md §7).
        found = copied_from(rec, out)
    if not found:
        return {"launch": None, "arg": None, "kernel": None, "written": False}
    index, arg, launch = found[0]
    last_index, last_arg, _ = found[-1]
    return {"launch": index, "arg": arg, "kernel": launch.kernel, "written": launch.written[arg],
            "last_launch": last_index, "last_arg": last_arg}


def copied_from(rec: instrument.Recorder, out: torch.Tensor) -> list[tuple[int, int, instrument.LaunchRecord]]:
    """The launch argument whose bytes right after its launch are exactly `out`'s: the wrapper copied the
    kernel's result into it (`x1.copy_(y)`, in-place semantics; docs/realops.md §7), or returned a copy of it,
    maybe reshaped (`out.clone().reshape(...)`). The last such launch."""
    digest = None
    for index in range(len(rec.launches) - 1, -1, -1):
        launch = rec.launches[index]
        for arg, tensor in enumerate(launch.args):
            if tensor.dtype != out.dtype or tensor.numel() != out.numel():
                continue
            digest = digest or dumps.sha256(out)
            if launch.post_sha256[arg] == digest:
                return [(index, arg, launch)]
    return []


def dump(req: dict[str, Any], rec: instrument.Recorder, outputs: list[torch.Tensor], goldens: list[torch.Tensor],
         provenance: list[dict[str, Any]], rows: list[dict[str, Any] | None]) -> None:
    """Write the bytes the harness recompares outside this process (runtime.evidence.dumps); `rows`: each
    output's verified rows when graph verify launched only some of its row slices (row_slices.coverage)."""
    entries = []
    for out, golden, prov, covered in zip(outputs, goldens, provenance, rows):
        entry = dumps.OutputDump(golden=golden, output=out, rows=covered)
        if prov["launch"] is not None:
            first, last = rec.launches[prov["launch"]], rec.launches[prov["last_launch"]]
            arg = last.args[prov["last_arg"]]
            before = _before(rec, prov, out)
            # A reshaped copy is compared in the returned shape (same bytes in C order).
            entry.before = before.reshape(out.shape) if before is not None and before.numel() == out.numel() \
                else before
            entry.first_post_sha256 = first.post_sha256[prov["arg"]]
            entry.last_post_sha256 = last.post_sha256[prov["last_arg"]]
            entry.last_launch, entry.last_arg = prov["last_launch"], prov["last_arg"]
            same = (out.dtype == arg.dtype and out.shape == arg.shape and out.stride() == arg.stride()
                    and out.data_ptr() == arg.data_ptr())
            entry.arg_now = None if same else arg
        entries.append(entry)
    dumps.write(Path(req["results_dir"]), entries)
