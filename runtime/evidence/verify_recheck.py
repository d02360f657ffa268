"""pypto's graph-verify CSV held against the harness's own recomputation (docs/SECURITY.md).

pypto writes `verify_result_brief.csv` into the job's output dir, where the job can rewrite it
(FAILED to PASS, its numbers too). The job leader recomputes, from the graph's result as the
instrumentation read it raw after the launch (runtime.evidence.rawbytes, runtime.evidence.dumps), the numbers pypto
printed for the tensor graph against the golden: the largest |diff| and the count of elements
with |o - g| > rtol * (|o| + |g|) / 2 + atol (pypto's rule, docs/pypto.md §3). A CSV row that
says otherwise, or whose verdict disagrees with its own error count, is a contradiction: the case
is never accepted (runtime.evidence.corroborate).

Only the golden rows of the launch that last wrote each output are recomputed (an output the graph
left unwritten is garbage on both sides and fails anyway): earlier launches of
a multi-launch wrapper compared partial results, and the pass-verify rows (a lowered pass against
the tensor graph) have no second copy the harness could hold.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterator

from runtime.fence.jobfiles import JobFiles

KEEP = ("passName", "referPassName", "ioflag", "verifyResult", "maxAbsDiff", "errorCount", "outputShape")
# The CSV prints 6 decimals; pypto sums in float32 where we use float64.
MAX_DIFF_ABS_SLACK = 2e-6
MAX_DIFF_REL_SLACK = 1e-4


def recompute(files: JobFiles, out: dict[str, Any], gold: dict[str, Any], rtol: float,
              atol: float, chunks: Callable[[JobFiles, dict[str, Any]], Iterator[Any]]) -> dict[str, Any]:
    """pypto's numbers for one graph-written output: {"max_abs_diff", "error_count", "numel", "shape"}.

    `chunks` reads a dump in capped pieces (runtime.evidence.dumps.chunks, passed in: dumps calls us)."""
    import torch

    top, errors, numel = 0.0, 0, 0
    out_dtype = getattr(torch, out["dtype"])
    for o, g in zip(chunks(files, out), chunks(files, gold)):
        # pypto compares with the golden cast to the output's dtype (runtime.evidence.graph_verify._goldens_for).
        g = g.to(out_dtype)
        if o.is_complex() or g.is_complex():
            return {"max_abs_diff": None, "error_count": None, "numel": None, "shape": out["shape"]}
        o64, g64 = o.to(torch.float64), g.to(torch.float64)
        diff = (o64 - g64).abs()
        numel += diff.numel()
        finite = diff[torch.isfinite(diff)]
        if finite.numel():
            top = max(top, float(finite.max()))
        bound = rtol * (o64.abs() + g64.abs()) / 2 + atol
        errors += int((~(diff <= bound)).sum())
    return {"max_abs_diff": top, "error_count": errors, "numel": numel, "shape": out["shape"]}


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
    # A NaN or inf in the graph's result: pypto's max is not finite, ours is over the finite pairs.
    if math.isfinite(theirs_max) and not math.isclose(theirs_max, top, rel_tol=MAX_DIFF_REL_SLACK,
                                                      abs_tol=MAX_DIFF_ABS_SLACK):
        return False
    # Elements right at the bound can fall either way between float32 and float64 arithmetic.
    return abs(theirs_count - int(ours["error_count"])) <= max(1, int(ours["numel"]) // 10000)


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
