"""Graph verify's peak memory against the case's tensor bytes, at model shapes (docs/pypto.md §10).

    python bench/graph_verify_memory.py [--rows 128 512 1024] [--hidden 3072] [--memory GIB] [--plain]
                                        [--timeout S] [--slices N|all]

Each shape is one case of our own fp16 rms_norm package (`[1, rows, hidden]`, a `[hidden]` gamma, the kernel
walking 8 rows per loop iteration as the gym's norms do), run through the harness as `crosscheck run` runs it,
one at a time, under the job memory limit `--memory` (default 10 GiB) and the case timeout `--timeout` (default
crosscheck's 300 s); a launch cut into row slices launches at most `--slices` of them (default: as many as
the time allows, as crosscheck does). Printed per shape: the bytes of x, the
peak real memory of the graph-verify job (the job cgroup's peak), with `--plain` also the same case without
graph verify, the verdict and the rows graph evidence covers. The last line is a summary.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.case_runner import DEFAULT_TIMEOUT_S  # noqa: E402
from runtime.evidence.calculator import default_cache_dir  # noqa: E402
from runtime.judge.labels import row_slices_text  # noqa: E402
from runtime.runner import RunOptions, run_submission  # noqa: E402
from runtime.warm import WarmParent  # noqa: E402

ROW_TILE = 8
GOLDEN = '''
import torch


def rms_golden(x, gamma):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma.float()).to(x.dtype)
'''
IMPL = f'''
import pypto
import torch

ROW_TILE = {ROW_TILE}


@pypto.frontend.jit
def rms_kernel(x: pypto.Tensor([], pypto.DT_FP16), gamma: pypto.Tensor([], pypto.DT_FP16),
               out: pypto.Tensor([], pypto.DT_FP16)):
    hidden = x.shape[2]
    pypto.set_vec_tile_shapes(1, ROW_TILE, hidden)
    for i in pypto.loop(x.shape[1] // ROW_TILE, name="ROWS", idx_name="i"):
        rows = pypto.cast(pypto.view(x, [1, ROW_TILE, hidden], [0, i * ROW_TILE, 0]), pypto.DT_FP32)
        mean_sq = pypto.sum(rows * rows, dim=-1, keepdim=True) / float(hidden)
        y = rows / pypto.sqrt(mean_sq + 1e-6) * pypto.cast(gamma, pypto.DT_FP32)
        pypto.assemble(pypto.cast(y, pypto.DT_FP16), [0, i * ROW_TILE, 0], out)


def rms_wrapper(x, gamma):
    out = torch.empty_like(x)
    rms_kernel(x, gamma, out)
    return out
'''


class Recording:
    """The warm parent, keeping each job's leader report (the job cgroup's peak memory is in it)."""

    def __init__(self, warm: WarmParent):
        self.warm, self.raw = warm, []  # type: ignore[var-annotated]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.warm, name)

    def run_jobs(self, requests: list[dict[str, Any]], parallel: int) -> Iterator[tuple[int, dict[str, Any]]]:
        jobs = self.warm.run_jobs(requests, parallel)
        try:
            for index, report in jobs:
                self.raw.append(report)
                yield index, report
        finally:
            jobs.close()


def package(root: Path, rows: int, hidden: int) -> Path:
    pkg = root / "rms"
    pkg.mkdir()
    (pkg / "rms_golden.py").write_text(GOLDEN)
    (pkg / "rms_impl.py").write_text(IMPL)
    case = {"id": f"rms_{rows}x{hidden}", "seed": 1, "rtol": 1e-2, "atol": 1e-2,
            "inputs": [{"name": "x", "shape": [1, rows, hidden], "dtype": "float16", "init": "randn"},
                       {"name": "gamma", "shape": [hidden], "dtype": "float16", "init": "randn"}],
            "output": {"shape": [1, rows, hidden], "dtype": "float16"}}
    (pkg / "test_cases.json").write_text(json.dumps({"op_name": "rms", "test_cases": [case]}))
    return pkg


def run(warm: WarmParent, rows: int, hidden: int, args: argparse.Namespace, graph: bool) -> dict[str, Any]:
    rec = Recording(warm)
    with tempfile.TemporaryDirectory() as tmp:
        pkg = package(Path(tmp), rows, hidden)
        options = RunOptions(graph_verify=graph, cache_dir=default_cache_dir(), work_dir=Path(tmp) / "w",
                             memory_bytes=int(args.memory * 2**30), timeout_s=args.timeout,
                             graph_slice_count=None if args.slices == "time" else int(args.slices))
        report = run_submission(pkg, options, warm=rec)  # type: ignore[arg-type]
    case = report.cases[0]
    first = rec.raw[0] if rec.raw else {}  # the graph-verify job (a plain SIM re-run may follow)
    limit = (first.get("resource_limit") or {}).get("limit")
    cuts = (case.graph_verify or {}).get("row_slices") or []
    return {"peak_gib": (first.get("peak_memory_bytes") or 0) / 2**30, "verdict": case.verdict,
            "slices": f", {row_slices_text(cuts[0])}" if cuts else "",
            "graph": (case.graph_verify or {}).get("status"), "stopped": limit or "", "jobs": len(rec.raw),
            "s": case.duration_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[128, 512, 1024])
    ap.add_argument("--hidden", type=int, default=3072)
    ap.add_argument("--memory", type=float, default=10.0, help="the job memory limit, GiB")
    ap.add_argument("--plain", action="store_true", help="also run each case without graph verify")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="the case timeout, seconds")
    ap.add_argument("--slices", default="time", help="at most this many row slices launched (default: as many as "
                    "the time allows)")
    args = ap.parse_args()
    print(f"{'shape':<18}{'x MiB':>7}{'graph GiB':>10}{'x bytes':>9}{'plain GiB':>10}  verdict (graph verify)")
    ratios = []
    with WarmParent("sim") as warm:
        for rows in args.rows:
            x_bytes = rows * args.hidden * 2
            got = run(warm, rows, args.hidden, args, True)
            plain = run(warm, rows, args.hidden, args, False)["peak_gib"] if args.plain else None
            ratio = got["peak_gib"] * 2**30 / x_bytes
            ratios.append(ratio)
            stopped = f", stopped at its {got['stopped']} limit" if got["stopped"] else ""
            print(f"{f'[1, {rows}, {args.hidden}]':<18}{x_bytes / 2**20:>7.1f}{got['peak_gib']:>10.2f}"
                  f"{ratio:>8.0f}x{'' if plain is None else f'{plain:>10.2f}':>10}  {got['verdict']} "
                  f"({got['graph']}{got['slices']}{stopped}, {got['s']:.0f} s)", flush=True)
    print(f"summary: {len(ratios)} shapes, graph verify peak {min(ratios):.0f}x to {max(ratios):.0f}x the bytes of x "
          f"(memory limit {args.memory:g} GiB, case timeout {args.timeout:g} s, slices {args.slices})")


if __name__ == "__main__":
    main()
