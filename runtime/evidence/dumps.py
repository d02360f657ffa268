"""Output and golden bytes as files, so that the harness compares them itself (docs/SECURITY.md).

The job process writes, at its compare stage, the raw bytes of every golden, every returned
output, the launch argument's bytes from before the launch and (when the output is only a view
of it) the argument's bytes now, plus a manifest with dtype, shape and the hashes the
instrumentation took right after each launch. The job leader, a process the kernel cannot
touch, reads them back through runtime.fence.jobfiles and recompares with its own copy of
runtime.evidence.metrics, in chunks, so a kernel that edits our metrics, events or provenance in its own
process does not decide its verdict. No pickle anywhere: raw bytes and JSON.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.evidence import slice_sample
from runtime.fence.jobfiles import JobFiles

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1024 * 1024
CHUNK_ELEMENTS = 4 * 1024 * 1024
MAX_OUTPUTS = 64
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128")
# The metrics a verdict rests on; the job's and the harness's must agree on each.
DECIDING_KEYS = ("shape_match", "mismatch_count", "nan_count", "inf_count", "bit_identical", "max_abs_diff")


# -- in the job process ------------------------------------------------------------------------
@dataclass
class OutputDump:
    golden: Any  # torch.Tensor
    output: Any  # torch.Tensor, as the wrapper returned it
    before: Any = None  # the launch argument before its first launch (None: not a launch argument)
    arg_now: Any = None  # the launch argument now, when the output is not the whole argument
    first_post_sha256: str | None = None  # the argument right after its first launch
    last_post_sha256: str | None = None  # ... and after its last launch
    last_launch: int | None = None  # the index of that last launch (whose verify CSV is recomputed)
    last_arg: int | None = None  # ... and the output's argument in it (pypto's `output<arg>` row)
    rows: dict[str, Any] | None = None  # graph verify launched some row slices only: compared on these rows


def tensor_bytes(t: Any) -> memoryview | bytes:
    """The tensor's bytes in C order: read raw from its memory (runtime.evidence.rawbytes), so no patched torch
    method decides them; a device tensor (NPU) through torch's copy to the CPU."""
    import torch

    from runtime.evidence import rawbytes

    if rawbytes.on_cpu(t):
        return rawbytes.read(t)
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else memoryview(b"")


def sha256(t: Any) -> str:
    from runtime.evidence import rawbytes

    return rawbytes.sha256(bytes(tensor_bytes(t)))


def _meta(t: Any, name: str) -> dict[str, Any]:
    return {"file": name, "dtype": str(t.dtype).replace("torch.", ""), "shape": [int(d) for d in t.shape],
            "nbytes": int(t.numel() * t.element_size())}


def write(folder: Path, outputs: list[OutputDump]) -> None:
    """Dump each output's tensors into `folder` (the job's results dir), the manifest last."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for i, dump in enumerate(outputs[:MAX_OUTPUTS]):
        entry: dict[str, Any] = {"first_post_sha256": dump.first_post_sha256,
                                 "last_post_sha256": dump.last_post_sha256, "last_launch": dump.last_launch,
                                 "last_arg": dump.last_arg, "rows": dump.rows}
        for key in ("golden", "output", "before", "arg_now"):
            t = getattr(dump, key)
            if t is None:
                entry[key] = None
                continue
            name = f"{key}-{i}.bin"
            with open(folder / name, "wb") as f:
                f.write(tensor_bytes(t))
            entry[key] = _meta(t, name)
        entries.append(entry)
    (folder / MANIFEST).write_text(json.dumps({"outputs": entries}))


# -- in the job leader -------------------------------------------------------------------------
class DumpError(ValueError):
    """The dumps are missing or malformed: the job's result cannot be checked."""


def _check_meta(meta: Any, files: JobFiles) -> dict[str, Any]:
    if not isinstance(meta, dict) or meta.get("dtype") not in DTYPES:
        raise DumpError(f"bad tensor description {str(meta)[:200]}")
    shape = meta.get("shape")
    if not isinstance(shape, list) or len(shape) > 64 or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise DumpError(f"bad shape {str(shape)[:200]}")
    import torch

    itemsize = torch.empty(0, dtype=getattr(torch, meta["dtype"])).element_size()
    if meta.get("nbytes") != math.prod(shape) * itemsize:
        raise DumpError(f"{meta.get('file')}: {meta.get('nbytes')} bytes do not match shape {shape}")
    name = meta.get("file")
    if not isinstance(name, str) or "/" in name or files.size(name) != meta["nbytes"]:
        raise DumpError(f"{name}: missing, refused or not {meta['nbytes']} bytes")
    return meta


def chunks(files: JobFiles, meta: dict[str, Any], digest: Any = None) -> Iterator[Any]:
    """Flat tensors of at most CHUNK_ELEMENTS elements, read in order with caps; hashes as it goes."""
    import torch

    dtype = getattr(torch, meta["dtype"])
    itemsize = torch.empty(0, dtype=dtype).element_size()
    step = CHUNK_ELEMENTS * itemsize
    with files.open(meta["file"]) as fd:
        offset = 0
        while offset < meta["nbytes"]:
            data = bytearray(min(step, meta["nbytes"] - offset))  # read into: no second copy of the chunk
            got = os.preadv(fd, [data], offset)
            if not got or got != len(data) or got % itemsize:
                raise DumpError(f"{meta['file']}: changed while being read")
            if digest is not None:
                digest.update(data)
            offset += got
            yield torch.frombuffer(data, dtype=torch.uint8).view(dtype)


def in_step(files: JobFiles, metas: list[dict[str, Any]], digests: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The chunks of several dumps side by side, each file read once: {file name: chunk}.

    A shorter dump drops out of the later steps; `digests` (by file name) hash while reading."""
    streams = {m["file"]: chunks(files, m, digests.get(m["file"])) for m in metas}
    while streams:
        step = {}
        for name, stream in list(streams.items()):
            chunk = next(stream, None)
            if chunk is None:
                del streams[name]
            else:
                step[name] = chunk
        if step:
            yield step


def compare_files(files: JobFiles, out: dict[str, Any], gold: dict[str, Any], rtol: float, atol: float,
                  digest: Any = None, gold_digest: Any = None) -> dict[str, Any]:
    """runtime.evidence.metrics.compare of two dumped tensors, chunk by chunk (same keys, same deciding values)."""
    from runtime.evidence import metrics

    base = _base(out, gold, rtol, atol)
    if not base["shape_match"]:
        return {**base, **_unmatched(files, out, gold, digest, gold_digest)}
    return merged(base, [metrics.compare(o, g, rtol, atol)
                         for o, g in zip(chunks(files, out, digest), chunks(files, gold, gold_digest))])


def _base(out: dict[str, Any], gold: dict[str, Any], rtol: float, atol: float) -> dict[str, Any]:
    base = {"rtol": rtol, "atol": atol, "output_shape": out["shape"], "golden_shape": gold["shape"],
            "output_dtype": out["dtype"], "golden_dtype": gold["dtype"]}
    base["shape_match"] = out["shape"] == gold["shape"]
    base["dtype_match"] = out["dtype"] == gold["dtype"]
    return base


def merged(base: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One compare's metrics from its chunks' (runtime.evidence.metrics.compare of each)."""
    numel = sum(p["numel"] for p in parts)
    mism = sum(p["mismatch_count"] for p in parts)

    def worst(key: str) -> float | None:
        values = [p[key] for p in parts if p.get(key) is not None]
        return max(values) if values else None

    def least(key: str) -> float | None:
        values = [p[key] for p in parts if p.get(key) is not None]
        return min(values) if values else None

    weighted = [(p["mean_abs_diff"], p["finite_pairs"]) for p in parts if p.get("mean_abs_diff") is not None]
    total = sum(n for _, n in weighted)
    return {
        **base, "numel": numel,
        "nan_count": sum(p["nan_count"] for p in parts), "inf_count": sum(p["inf_count"] for p in parts),
        "output_abs_max": worst("output_abs_max"), "golden_abs_max": worst("golden_abs_max"),
        "golden_min": least("golden_min"), "golden_max": worst("golden_max"),
        "bit_identical": base["dtype_match"] and all(p["bit_identical"] for p in parts),
        "max_abs_diff": worst("max_abs_diff"), "max_rel_diff": worst("max_rel_diff"), "finite_pairs": total,
        "mean_abs_diff": sum(m * n for m, n in weighted) / total if total else None,
        "mismatch_count": mism, "mismatch_ratio": mism / numel if numel else 0.0,
    }


def _unmatched(files: JobFiles, out: dict[str, Any], gold: dict[str, Any], digest: Any,
               gold_digest: Any) -> dict[str, Any]:
    """The shape-mismatch metrics: counts and magnitudes of each side, no diffs."""
    import torch

    def scan(meta: dict[str, Any], d: Any) -> tuple[int, int, int, float | None]:
        numel = nan = inf = 0
        top: float | None = None
        for c in chunks(files, meta, d):
            c = (c.abs() if c.is_complex() else c).to(torch.float64)
            numel += c.numel()
            nan += int(torch.isnan(c).sum())
            inf += int(torch.isinf(c).sum())
            finite = c[torch.isfinite(c)].abs()
            if finite.numel():
                top = max(top or 0.0, float(finite.max()))
        return numel, nan, inf, top

    numel, nan, inf, out_max = scan(out, digest)
    gold_max = scan(gold, gold_digest)[3]
    return {"numel": numel, "nan_count": nan, "inf_count": inf, "output_abs_max": out_max,
            "golden_abs_max": gold_max, "bit_identical": False, "max_abs_diff": None, "max_rel_diff": None,
            "mean_abs_diff": None, "mismatch_count": numel, "mismatch_ratio": 1.0}


def recheck(files: JobFiles, tolerance: tuple[float, float], graph_active: bool,
            golden_sha256: list[str] | None, map_output: bool = False,
            sample: tuple[int | None, int] = (None, 0)) -> dict[str, Any]:
    """The harness's own compare of the dumped bytes.

    Returns {"metrics", "graph_metrics", "outputs": [{"launch_wrote", "changed_after_launch"}]}, where
    metrics compares what the kernel left (the bytes before the launch when graph verify wrote the
    outputs, as the job does) and graph_metrics the outputs as returned. `golden_sha256` are the
    hashes the job sent right after its golden stage; the dumped goldens must still match them.
    The outputs as returned get a mismatch map (runtime.evidence.mismatch_map) when the graph wrote them or when
    `map_output` (an NPU's result); SIM's own leftover bytes never do: they are no evidence.
    `sample`: the request's (slices launched, case seed), which a claim of rows verified must follow (_rows).
    Raises DumpError.
    """
    from runtime.evidence import metrics

    data = files.read_or_none(MANIFEST, MAX_MANIFEST_BYTES)
    if data is None:
        raise DumpError("the job left no output dump")
    try:
        manifest = json.loads(data)
        entries = manifest["outputs"]
    except (ValueError, KeyError, TypeError):
        raise DumpError("the output dump's manifest is not valid") from None
    if not isinstance(entries, list) or not 0 < len(entries) <= MAX_OUTPUTS:
        raise DumpError("the output dump's manifest lists no outputs")
    if not isinstance(golden_sha256, list) or len(golden_sha256) != len(entries):
        raise DumpError("the job did not report its goldens before running the kernel")
    rtol, atol = tolerance
    raw, graph, outputs = [], [], []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise DumpError("the output dump's manifest is not valid")
        gold = _check_meta(entry.get("golden"), files)
        out = _check_meta(entry.get("output"), files)
        before = _check_meta(entry["before"], files) if entry.get("before") else None
        arg_now = _check_meta(entry["arg_now"], files) if entry.get("arg_now") else None
        graph_wrote = graph_active and before is not None
        # Against every golden of its shape: pypto compared it with the one the graph run registered.
        others = [_check_meta(other.get("golden"), files) for other in entries
                  if graph_wrote and isinstance(other, dict) and isinstance(other.get("golden"), dict)
                  and other["golden"].get("shape") == out["shape"]][:MAX_OUTPUTS]
        rows = _rows(entry.get("rows"), gold, out, sample)
        checked = _one_pass(files, gold, out, before if graph_wrote else None, others, rtol, atol,
                            hashed=[m for m in (gold, arg_now or out, before) if m is not None],
                            mapped=graph_wrote or map_output, rows=rows)
        if checked["sha256"][gold["file"]] != golden_sha256[index]:
            raise DumpError(f"golden {index} changed after the golden stage")
        now_sha = checked["sha256"][(arg_now or out)["file"]]
        before_sha = checked["sha256"][before["file"]] if before is not None else None
        if graph_wrote:
            raw.append(checked["before"])
            graph.append(checked["returned"])
        else:
            raw.append(checked["returned"])
        first, last = entry.get("first_post_sha256"), entry.get("last_post_sha256")
        outputs.append({
            "pypto_recompute": checked["recomputed"] if graph_wrote else None,
            "last_launch": entry.get("last_launch"), "last_arg": entry.get("last_arg"),
            "launch_wrote": None if before_sha is None or not first else before_sha != first,
            "changed_after_launch": None if before is None or not last else now_sha != last,
            "metrics": raw[-1], "graph_metrics": graph[-1] if graph_wrote else None,
        })
    return {"metrics": metrics.combine(raw), "graph_metrics": metrics.combine(graph) if graph else None,
            "outputs": outputs}


def _one_pass(files: JobFiles, gold: dict[str, Any], out: dict[str, Any], before: dict[str, Any] | None,
              others: list[dict[str, Any]], rtol: float, atol: float, hashed: list[dict[str, Any]],
              mapped: bool = False, rows: dict[str, Any] | None = None) -> dict[str, Any]:
    """One output's checks with each dump read once: the hashes of `hashed`, out and (when given) before
    against the golden, and pypto's verify numbers for out against each of `others` (same shape as out);
    `mapped`: out's mismatch map too. With `rows` (see _rows), out and before are compared with the golden on
    those rows only (the map then shows those rows' mismatches).

    Each chunk serves every check that needs it; a pair whose shapes differ is compared by compare_files."""
    from runtime.evidence import metrics, mismatch_map, verify_recheck

    digests = {m["file"]: hashlib.sha256() for m in hashed}
    reading = {m["file"]: m for m in (gold, out, *([before] if before else []), *others, *hashed)}
    pairs = {"returned": out, "before": before} if before else {"returned": out}
    parts: dict[str, list[dict[str, Any]]] = {k: [] for k, m in pairs.items() if m["shape"] == gold["shape"]}
    recomputes = [verify_recheck.Recompute(out["shape"]) for _ in others]
    where = mismatch_map.Accumulator(out["shape"]) if mapped and "returned" in parts else None
    at = 0  # the element the chunks start at
    for step in in_step(files, list(reading.values()), digests):
        g, o = step.get(gold["file"]), step.get(out["file"])  # None past their end (a longer arg_now goes on)
        for key in parts if g is not None else ():
            mapping = where if key == "returned" else None
            for lo, hi in _within(rows, at, g.numel()):
                if mapping is not None:
                    mapping.offset = at + lo  # rows not verified are skipped, not counted
                parts[key].append(metrics.compare(step[pairs[key]["file"]][lo:hi], g[lo:hi], rtol, atol, mapping))
        at += g.numel() if g is not None else 0
        for rec, other in zip(recomputes, others) if o is not None else ():
            # The output bit-identical to this very golden: every finite diff is 0 and only infinities count.
            same = other["file"] == gold["file"] and "returned" in parts and parts["returned"][-1]["bit_identical"]
            rec.add(o, step[other["file"]], rtol, atol, parts["returned"][-1]["inf_count"] if same else None)
    found: dict[str, Any] = {"sha256": {name: d.hexdigest() for name, d in digests.items()},
                             "recomputed": [rec.result() for rec in recomputes]}
    for key, meta in pairs.items():
        found[key] = (merged(_base(meta, gold, rtol, atol), parts[key]) if key in parts
                      else compare_files(files, meta, gold, rtol, atol))
        if rows is not None and key in parts:
            found[key]["rows"] = {k: rows[k] for k in ("dim", "verified", "of")}
    summary = where.summary() if where is not None else None
    if summary is not None:
        found["returned"][mismatch_map.KEY] = summary
    return found


def _rows(claim: Any, gold: dict[str, Any], out: dict[str, Any], sample: tuple[int | None, int]) -> dict[str, Any] | None:
    """The job's claim that graph verify launched only these row slices of the output (runtime.evidence.row_slices),
    checked, with the flat element ranges [start, stop) it means; None when there is no claim. Raises DumpError
    for a claim other than the slices slice_sample.sample draws with the request's count and seed (the first, the
    last and the seed's), so a forged claim cannot choose the rows a kernel gets right."""
    if claim is None:
        return None
    shape = gold["shape"]
    try:
        dim, ranges, of = int(claim["dim"]), [[int(a), int(b)] for a, b in claim["verified"]], int(claim["of"])
    except (TypeError, KeyError, ValueError):
        raise DumpError("the output dump's rows are not valid") from None
    flat = [a for r in ranges for a in r]
    if (out["shape"] != shape or not 0 <= dim < len(shape) or shape[dim] != of or any(d != 1 for d in shape[:dim])
            or not ranges or flat != sorted(flat) or flat[0] != 0 or flat[-1] != of
            or any(a >= b for a, b in ranges)):
        raise DumpError(f"the output dump's rows {str(claim)[:200]} are not slices of its shape {shape}")
    if not slice_sample.sampled(ranges, of, *sample):
        raise DumpError(f"the output dump's rows {str(claim)[:200]} are not the slices the case's sample launches")
    inner = math.prod(shape[dim + 1:])
    return {"dim": dim, "verified": ranges, "of": of, "elements": [(a * inner, b * inner) for a, b in ranges]}


def _within(rows: dict[str, Any] | None, at: int, count: int) -> list[tuple[int, int]]:
    """The parts [lo, hi) of a chunk of `count` elements starting at element `at` that lie in the rows."""
    if rows is None:
        return [(0, count)]
    return [(max(a, at) - at, min(b, at + count) - at) for a, b in rows["elements"] if a < at + count and b > at]


def disagreement(job: dict[str, Any] | None, harness: dict[str, Any] | None) -> str | None:
    """Why the job's metrics and the harness's differ on a deciding value, or None."""
    if not job or not harness:
        return None
    for key in DECIDING_KEYS:
        a, b = job.get(key), harness.get(key)
        if isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0):
            continue
        if a != b:
            return f"{key}: the job reported {a!r}, the harness measured {b!r}"
    return None
