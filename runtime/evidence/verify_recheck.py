"""pypto's graph-verify CSV held against the harness's own recomputation (docs/SECURITY.md).

pypto writes `verify_result_brief.csv` into the job's output dir, where the job can rewrite it
(FAILED to PASS, its numbers too). The job leader recomputes, from the graph's result as the
instrumentation read it raw after the launch (runtime.evidence.rawbytes, runtime.evidence.dumps), the numbers pypto
printed for the tensor graph against the golden: the count of elements with
|o - g| > rtol * (|o| + |g|) / 2 + atol and the largest |diff| among them (pypto's rule,
docs/pypto.md §3). A CSV row that says otherwise, or whose verdict disagrees with its own error
count, is a contradiction: the case is never accepted (runtime.evidence.corroborate).

Only the golden rows of the launch that last wrote each output are recomputed (an output the graph
left unwritten is garbage on both sides and fails anyway): earlier launches of
a multi-launch wrapper compared partial results, and the pass-verify rows (a lowered pass against
the tensor graph) have no second copy the harness could hold.
"""
from __future__ import annotations

import math
from typing import Any

KEEP = ("passName", "referPassName", "ioflag", "verifyResult", "maxAbsDiff", "errorCount", "outputShape")
# The CSV prints 6 decimals; pypto sums in float32 where we use float64.
MAX_DIFF_ABS_SLACK = 2e-6
MAX_DIFF_REL_SLACK = 1e-4


class Recompute:
    """pypto's numbers for one graph-written output, a chunk at a time: {"max_abs_diff", "error_count", "numel",
    "shape"} (runtime.evidence.dumps reads the chunks, each once for all its checks)."""

    def __init__(self, shape: list[int]) -> None:
        self.shape, self.top, self.errors, self.numel, self.complex = shape, 0.0, 0, 0, False

    def add(self, o: Any, g: Any, rtol: float, atol: float, identical_infs: int | None = None) -> None:
        """One chunk of the output and the golden. `identical_infs`: the chunks are bit-identical with this
        many infinities, whose diff is NaN (an error by pypto's rule); every other diff is 0."""
        import torch

        if self.complex or o.is_complex() or g.is_complex():
            self.complex = True
            return
        self.numel += o.numel()
        if identical_infs is not None and rtol >= 0 and atol >= 0:
            self.errors += identical_infs  # the finite diffs are 0: the largest stays as it is (>= 0)
            return
        # pypto compares with the golden cast to the output's dtype (runtime.evidence.graph_verify._goldens_for).
        o64, g64 = o.to(torch.float64), g.to(o.dtype).to(torch.float64)
        diff = (o64 - g64).abs_()
        # Not in place on o64 or g64: either can be the chunk itself (float64), which other checks still read.
        bound = o64.abs().add_(g64.abs()).mul_(rtol).div_(2).add_(atol)
        within = diff <= bound
        self.errors += diff.numel() - int(within.sum())
        # pypto's maxAbsDiff is the largest diff among the elements outside tolerance, 0.000000 when none is
        # (docs/pypto.md §3): a PASS of fp16 outputs 1 ulp off the golden prints 0.
        failing = diff[~within & torch.isfinite(diff)]
        if failing.numel():
            self.top = max(self.top, float(failing.max()))

    def result(self) -> dict[str, Any]:
        if self.complex:
            return {"max_abs_diff": None, "error_count": None, "numel": None, "shape": self.shape}
        return {"max_abs_diff": self.top, "error_count": self.errors, "numel": self.numel, "shape": self.shape}


def golden_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: r.get(k, "") for k in KEEP} for r in rows if r.get("referPassName") == "golden"]


def contradictions(rows_by_launch: dict[int, list[dict[str, str]]], outputs: list[dict[str, Any]]) -> list[str]:
    """Where a graph CSV row disagrees with its own verdict or with the harness's recomputation."""
    found = []
    for launch, rows in sorted(rows_by_launch.items()):
        for row in rows:
            why = _self_contradiction(row)
            if why:
                found.append(f"pypto's verify CSV of launch {launch} {why}")
    for index, o in enumerate(outputs):
        ours = [r for r in o.get("pypto_recompute") or [] if isinstance(r, dict) and r.get("max_abs_diff") is not None]
        launch, arg = o.get("last_launch"), o.get("last_arg")
        if not ours or not isinstance(launch, int) or not isinstance(arg, int):
            continue
        if o.get("launch_wrote") is False:
            # The graph never wrote it: pypto compared a buffer of uninitialised memory of its own, read at
            # another moment than the dump, so its numbers are not ours to hold (the case fails anyway).
            continue
        # pypto names the argument it compared: `output<arg>` (measured: `output2` for the third argument).
        rows = [r for r in rows_by_launch.get(launch, []) if r.get("ioflag") == f"output{arg}"
                and _shape_text(_parse_shape(r["outputShape"])) == _shape_text(ours[0]["shape"])]
        if rows and not any(_agrees(r, mine) for r in rows for mine in ours):
            r, mine = rows[0], ours[0]
            found.append(f"pypto's verify CSV of launch {launch} says {r['verifyResult']} with max |diff| "
                         f"{r['maxAbsDiff']} and {r['errorCount']} error(s) for output {index}; the harness "
                         f"recomputed max |diff| {mine['max_abs_diff']:.6g} and {mine['error_count']} error(s) "
                         "from the graph's result")
    return found


def _self_contradiction(row: dict[str, str]) -> str | None:
    count = _number(row.get("errorCount"))
    verdict = row.get("verifyResult")
    if count is None or verdict not in ("PASS", "FAILED"):
        return None
    if (verdict == "PASS") != (count == 0):
        return f"says {verdict} with {row.get('errorCount')} error(s) in the same row"
    return None


def _agrees(row: dict[str, str], ours: dict[str, Any]) -> bool:
    theirs_max, theirs_count = _float(row.get("maxAbsDiff")), _number(row.get("errorCount"))
    if theirs_max is None or theirs_count is None:
        return False
    top = float(ours["max_abs_diff"])
    # Elements right at the bound can fall either way between float32 and float64 arithmetic; the largest
    # diff among those outside tolerance is then compared only when both sides count the same ones.
    counted = int(ours["error_count"])
    if abs(theirs_count - counted) > max(1, int(ours["numel"]) // 10000):
        return False
    # A NaN or inf in the graph's result: pypto's max is not finite, ours is over the finite pairs.
    return theirs_count != counted or not math.isfinite(theirs_max) or math.isclose(
        theirs_max, top, rel_tol=MAX_DIFF_REL_SLACK, abs_tol=MAX_DIFF_ABS_SLACK)


def _float(text: Any) -> float | None:
    try:
        return float(str(text))
    except ValueError:
        return None


def _number(text: Any) -> float | None:
    value = _float(text)
    return value if value is not None and math.isfinite(value) else None


def _parse_shape(text: str) -> list[int] | None:
    try:
        return [int(p) for p in text.strip().strip("[]").split(",") if p.strip()]
    except ValueError:
        return None


def _shape_text(shape: Any) -> str:
    return ",".join(str(int(d)) for d in shape) if isinstance(shape, list) else "?"
