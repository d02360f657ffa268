"""The fused compare passes give the plain float64 formulation's numbers, bit for bit.

The reference below converts both sides to float64 and computes every metric on its own, as the
compare did before it skipped work (docs/harness-cost.md). The fast paths (a bit-identical output,
all finite, exact dtypes compared without a float64 copy, the leader's one pass over each dump)
must not move a single bit, so results are compared as JSON text: -0.0, the last digit of a mean
and None against 0.0 all count.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from runtime.evidence import dumps, metrics, mismatch_map, verify_recheck
from runtime.fence.jobfiles import JobFiles

TOL = (1e-3, 1e-5)


def reference(output: torch.Tensor, golden: torch.Tensor, rtol: float, atol: float) -> dict[str, Any]:
    """Every metric from float64 copies, one formula each."""
    o = output.abs().to(torch.float64) if output.is_complex() else output.to(torch.float64)
    g = golden.abs().to(torch.float64) if golden.is_complex() else golden.to(torch.float64)

    def finite_max(t: torch.Tensor) -> float | None:
        kept = t[torch.isfinite(t)]
        return float(kept.max()) if kept.numel() else None

    shape_match = list(output.shape) == list(golden.shape)
    dtype_match = output.dtype == golden.dtype
    m: dict[str, Any] = {
        "rtol": rtol, "atol": atol, "output_shape": list(output.shape), "golden_shape": list(golden.shape),
        "output_dtype": str(output.dtype).replace("torch.", ""), "golden_dtype": str(golden.dtype).replace("torch.", ""),
        "shape_match": shape_match, "dtype_match": dtype_match, "numel": o.numel(),
        "nan_count": int(torch.isnan(o).sum()), "inf_count": int(torch.isinf(o).sum()),
        "output_abs_max": finite_max(o.abs()), "golden_abs_max": finite_max(g.abs()),
        "golden_min": -finite_max(-g) if finite_max(-g) is not None else None, "golden_max": finite_max(g),
        "bit_identical": bool(shape_match and dtype_match and torch.equal(output, golden)),
    }
    if not shape_match:
        return {**m, "max_abs_diff": None, "max_rel_diff": None, "mean_abs_diff": None,
                "mismatch_count": m["numel"], "mismatch_ratio": 1.0}
    diff = (o - g).abs()
    both = torch.isfinite(o) & torch.isfinite(g)
    d = diff[both]
    rel = d / g.abs()[both].clamp_min(metrics.REL_FLOOR)
    close = (diff <= atol + rtol * g.abs()) | (o == g)
    mism = int((~close).sum())
    m.update(finite_pairs=d.numel(), max_abs_diff=float(d.max()) if d.numel() else None,
             mean_abs_diff=float(d.mean()) if d.numel() else None, max_rel_diff=float(rel.max()) if rel.numel() else None,
             mismatch_count=mism, mismatch_ratio=mism / m["numel"] if m["numel"] else 0.0)
    for key in ("max_abs_diff", "max_rel_diff", "mean_abs_diff"):
        if m[key] is not None and not math.isfinite(m[key]):
            m[key] = None
    return m


def reference_recompute(o: torch.Tensor, g: torch.Tensor, rtol: float, atol: float) -> dict[str, Any]:
    """pypto's numbers: the golden cast to the output's dtype, |o-g| > rtol*(|o|+|g|)/2 + atol, and the largest
    finite diff among the elements outside tolerance (docs/pypto.md §3)."""
    o64, g64 = o.reshape(-1).to(torch.float64), g.reshape(-1).to(o.dtype).to(torch.float64)
    diff = (o64 - g64).abs()
    bound = rtol * (o64.abs() + g64.abs()) / 2 + atol
    failing = diff[torch.isfinite(diff) & ~(diff <= bound)]
    return {"max_abs_diff": float(failing.max()) if failing.numel() else 0.0,
            "error_count": int((~(diff <= bound)).sum()), "numel": diff.numel(), "shape": list(o.shape)}


def text(m: dict[str, Any]) -> str:
    return json.dumps(m, sort_keys=True)


def golden_of(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=gen, dtype=torch.float64) * 3).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    low = -128 if dtype == torch.int8 else -1000
    return torch.randint(low, 127, shape, generator=gen, dtype=dtype)


def outputs_for(golden: torch.Tensor, seed: int) -> dict[str, torch.Tensor]:
    """The kinds of output a kernel gives: identical, close, garbage, with NaN and inf, of another dtype."""
    gen = torch.Generator().manual_seed(seed + 1)
    noise = torch.randn(golden.shape, generator=gen, dtype=torch.float64)
    kinds = {"identical": golden.clone()}
    if not golden.dtype.is_floating_point:
        kinds["off by one here and there"] = golden ^ (noise > 1.5).to(golden.dtype) if golden.dtype == torch.bool \
            else golden + (noise > 1.5).to(golden.dtype)
        return kinds
    kinds["close"] = (golden.to(torch.float64) * (1 + 1e-4 * noise)).to(golden.dtype)
    kinds["garbage"] = (noise * 1e30).to(golden.dtype)
    special = kinds["close"].clone().reshape(-1)
    if special.numel() >= 4:
        special[::7] = float("nan")
        special[1::11] = float("inf")
        special[2::13] = -float("inf")
        special[3::17] = 0.0
    kinds["nan and inf"] = special.reshape(golden.shape)
    infs = golden.clone().reshape(-1)
    infs[::5] = float("inf")
    kinds["identical with infinities"] = infs.reshape(golden.shape)  # but where the golden is finite
    kinds["all nan"] = torch.full_like(golden, float("nan"))
    kinds["float32 of it"] = golden.to(torch.float32) if golden.dtype != torch.float32 else golden.to(torch.float16)
    kinds["negative zeros"] = torch.where(golden == 0, -0.0, golden).to(golden.dtype) * 0
    return kinds


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int8, torch.int64, torch.bool]
SHAPES = [(0,), (1,), (5, 7), (3, 1, 33), (129, 65)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_compare_matches_the_float64_reference(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    golden = golden_of(dtype, shape, seed=len(shape) * 31 + sum(shape))
    for name, out in outputs_for(golden, seed=sum(shape)).items():
        for tol in (TOL, (0.0, 0.0), (1e-2, 1e-2)):
            assert text(metrics.compare(out, golden, *tol)) == text(reference(out, golden, *tol)), (name, tol)
            if golden.dtype.is_floating_point and out.dtype == golden.dtype:
                # the golden as the output: infinities and NaN in the reference's denominator too
                assert text(metrics.compare(golden, out, *tol)) == text(reference(golden, out, *tol)), (name, tol)


def test_compare_matches_on_views_shapes_off_and_complex() -> None:
    g = golden_of(torch.float32, (64, 48), seed=3)
    out = (g * 1.001).t().contiguous().t()  # a strided view of the same values
    assert not out.is_contiguous()
    assert text(metrics.compare(out, g, *TOL)) == text(reference(out, g, *TOL))
    assert text(metrics.compare(g.t(), g, *TOL)) == text(reference(g.t(), g, *TOL))
    assert text(metrics.compare(g[:10], g, *TOL)) == text(reference(g[:10], g, *TOL))
    z = torch.complex(g, g.flip(0))
    assert text(metrics.compare(z * 1.01, z, *TOL)) == text(reference(z * 1.01, z, *TOL))
    assert text(metrics.compare(z, z.clone(), *TOL)) == text(reference(z, z.clone(), *TOL))
    assert text(metrics.compare(g, g, -1.0, -1.0)) == text(reference(g, g, -1.0, -1.0))
    assert text(metrics.compare(g * 1.1, g, -1.0, 1e-3)) == text(reference(g * 1.1, g, -1.0, 1e-3))


def dumped(tmp_path: Path, dtype: torch.dtype, numel: int, kind: str) -> tuple[JobFiles, dict[str, Any], torch.Tensor,
                                                                            torch.Tensor, torch.Tensor]:
    """A results dir as the job leaves it: golden, output (the graph's result) and the bytes before the launch."""
    golden = golden_of(dtype, (numel,), seed=numel)
    if kind == "identical, infinities on both sides":
        golden[::9] = float("inf")
        out = golden.clone()
    else:
        out = outputs_for(golden, seed=7)[kind]
    before = torch.full_like(golden, float("nan"))  # scrubbed memory, partly written
    if kind != "garbage":
        before[: numel // 3] = 0.5
    entry = dumps.OutputDump(golden=golden, output=out, before=before, first_post_sha256="x",
                             last_post_sha256=dumps.sha256(out), last_launch=0, last_arg=1)
    dumps.write(tmp_path, [entry])
    return JobFiles(tmp_path, None), json.loads((tmp_path / dumps.MANIFEST).read_text()), golden, out, before


def merged(base: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The chunk merge as compare_files did it: sums, worst values, a weighted mean."""
    numel = sum(p["numel"] for p in parts)
    mism = sum(p["mismatch_count"] for p in parts)

    def worst(key: str) -> float | None:
        values = [p[key] for p in parts if p.get(key) is not None]
        return max(values) if values else None

    weighted = [(p["mean_abs_diff"], p["finite_pairs"]) for p in parts if p.get("mean_abs_diff") is not None]
    total = sum(n for _, n in weighted)
    return {**base, "numel": numel,
            "nan_count": sum(p["nan_count"] for p in parts), "inf_count": sum(p["inf_count"] for p in parts),
            "output_abs_max": worst("output_abs_max"), "golden_abs_max": worst("golden_abs_max"),
            "golden_min": min((p["golden_min"] for p in parts if p["golden_min"] is not None), default=None),
            "golden_max": worst("golden_max"),
            "bit_identical": base["dtype_match"] and all(p["bit_identical"] for p in parts),
            "max_abs_diff": worst("max_abs_diff"), "max_rel_diff": worst("max_rel_diff"), "finite_pairs": total,
            "mean_abs_diff": sum(m * n for m, n in weighted) / total if total else None,
            "mismatch_count": mism, "mismatch_ratio": mism / numel if numel else 0.0}


def chunked_reference(o: torch.Tensor, g: torch.Tensor, rtol: float, atol: float) -> dict[str, Any]:
    step = dumps.CHUNK_ELEMENTS
    parts = [reference(o[i:i + step], g[i:i + step], rtol, atol) for i in range(0, o.numel(), step)]
    dtypes = (str(o.dtype).replace("torch.", ""), str(g.dtype).replace("torch.", ""))
    base = {"rtol": rtol, "atol": atol, "output_shape": list(o.shape), "golden_shape": list(g.shape),
            "output_dtype": dtypes[0], "golden_dtype": dtypes[1], "shape_match": list(o.shape) == list(g.shape),
            "dtype_match": dtypes[0] == dtypes[1]}
    return merged(base, parts)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kind", ["identical", "close", "nan and inf", "identical with infinities",
                                  "identical, infinities on both sides", "garbage"])
def test_the_leaders_one_pass_matches_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    dtype: torch.dtype, kind: str) -> None:
    monkeypatch.setattr(dumps, "CHUNK_ELEMENTS", 1000)  # several chunks and a partial last one
    files, manifest, golden, out, before = dumped(tmp_path, dtype, 3333, kind)
    gold_sha = dumps.sha256(golden)
    got = dumps.recheck(files, TOL, True, [gold_sha])
    ours = got["outputs"][0]
    where = ours["graph_metrics"].pop(mismatch_map.KEY, None)  # the graph's result is mapped; SIM's own bytes never
    assert text(ours["graph_metrics"]) == text(chunked_reference(out, golden, *TOL))
    assert text(ours["metrics"]) == text(chunked_reference(before, golden, *TOL))
    o, g = out.to(torch.float64), golden.to(torch.float64)
    mismatched = (~(((o - g).abs() <= TOL[1] + TOL[0] * g.abs()) | (o == g))).nonzero().reshape(-1).tolist()
    assert (where or {}).get("first", []) == mismatched[:mismatch_map.FIRST_INDICES]
    assert (where is None) == (not mismatched)
    chunk_refs = [reference_recompute(out[i:i + 1000], golden[i:i + 1000], *TOL) for i in range(0, 3333, 1000)]
    assert ours["pypto_recompute"] == [{"max_abs_diff": max(r["max_abs_diff"] for r in chunk_refs),
                                        "error_count": sum(r["error_count"] for r in chunk_refs),
                                        "numel": 3333, "shape": [3333]}]
    assert ours["changed_after_launch"] is False and ours["launch_wrote"] is True
    with pytest.raises(dumps.DumpError, match="changed after the golden stage"):
        dumps.recheck(files, TOL, True, ["0" * 64])


def test_recompute_matches_the_reference_across_dtypes() -> None:
    g = golden_of(torch.float32, (2000,), seed=5)
    g[::9] = float("inf")
    g[1::9] = -float("inf")
    kinds = outputs_for(g.to(torch.bfloat16), seed=9)
    for name, out in kinds.items():
        if out.dtype != torch.bfloat16:
            continue
        shortcuts = (False, True) if name == "identical" else (False,)
        for shortcut in shortcuts:
            rec = verify_recheck.Recompute([2000])
            for i in range(0, 2000, 700):  # partial chunks
                o = out[i:i + 700]
                if shortcut:  # what the leader passes when the chunk is bit-identical to this golden
                    rec.add(o, g[i:i + 700].to(torch.bfloat16), *TOL, identical_infs=int(torch.isinf(o).sum()))
                else:
                    rec.add(o, g[i:i + 700], *TOL)
            assert text(rec.result()) == text(reference_recompute(out, g, *TOL)), (name, shortcut)


def test_the_leaders_one_pass_with_an_output_that_is_part_of_its_argument(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The launch argument (hashed, 3000 elements) outlasts the output and golden (1000) in the shared reads."""
    monkeypatch.setattr(dumps, "CHUNK_ELEMENTS", 400)
    arg = golden_of(torch.float32, (3000,), seed=2)
    golden = arg[:1000].clone() * 1.0001
    before = torch.full((1000,), float("nan"))
    out = arg[:1000]
    entry = dumps.OutputDump(golden=golden, output=out, before=before, arg_now=arg, first_post_sha256="x",
                             last_post_sha256=dumps.sha256(arg), last_launch=0, last_arg=0)
    dumps.write(tmp_path, [entry])
    got = dumps.recheck(JobFiles(tmp_path, None), TOL, True, [dumps.sha256(golden)])["outputs"][0]
    assert text(got["graph_metrics"]) == text(chunked_reference(out, golden, *TOL))
    assert text(got["metrics"]) == text(chunked_reference(before, golden, *TOL))
    assert got["changed_after_launch"] is False
    parts = [reference_recompute(out[i:i + 400], golden[i:i + 400], *TOL) for i in range(0, 1000, 400)]
    assert got["pypto_recompute"][0]["error_count"] == sum(p["error_count"] for p in parts)
