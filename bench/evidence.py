"""What checking the evidence outside the job costs, by output size (docs/SECURITY.md).

    python bench/evidence.py [--repeat 3]

One plain-SIM case per output size through an already started warm parent. Side by side per size:
the case's wall time, the job's compare stage (its own compare plus dumping the bytes) and the
leader's evidence work (copies, call folders, the byte recompare), all from the case's report.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.runner import RunOptions, run_submission  # noqa: E402
from runtime.warm import WarmParent  # noqa: E402

SHAPES = [(64, 128), (512, 1024), (1024, 4096)]  # 32 KiB, 2 MiB, 16 MiB of fp32 output
KERNEL = '''import pypto
import torch


@pypto.frontend.jit
def op_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(64, 128)
    out[:] = x * 2.0


def op_wrapper(x):
    out = torch.empty_like(x)
    op_kernel(x, out)
    return out
'''


def package(root: Path, shape: tuple[int, int]) -> Path:
    pkg = root / "op"
    pkg.mkdir()
    (pkg / "test_cases.json").write_text(json.dumps({"op_name": "op", "test_cases": [
        {"id": "c", "seed": 1, "input": {"shape": list(shape), "dtype": "float32"}}]}))
    (pkg / "op_impl.py").write_text(KERNEL)
    (pkg / "op_golden.py").write_text("def op_golden(x):\n    return x * 2.0\n")
    return pkg


def one(shape: tuple[int, int], parent: WarmParent) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        report = run_submission(package(Path(tmp), shape), RunOptions(graph_verify=False, work_dir=Path(tmp) / "w"),
                                warm=parent)
    case = report.cases[0]
    assert case.verdict == "sim_output_unwritten" and case.evidence["rechecked"], case.verdict_reason
    compare = next(s.duration_s for s in case.stages if s.name == "compare")
    return case.duration_s, compare, case.evidence["duration_s"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with WarmParent("sim") as parent:
        for shape in SHAPES:
            runs = [one(shape, parent) for _ in range(args.repeat)]
            rows.append((shape, *(statistics.median(r[i] for r in runs) for i in range(3))))
    print("medians of", args.repeat, "runs, seconds; evidence = the leader's work after the job exits")
    print(f"{'output':<18}{'MiB':>6}{'case s':>9}{'compare s':>11}{'evidence s':>12}{'evidence/case':>15}")
    for (rows_, cols), wall, compare, evidence in rows:
        mib = rows_ * cols * 4 / 2**20
        print(f"{f'{rows_}x{cols} fp32':<18}{mib:>6.2f}{wall:>9.2f}{compare:>11.2f}{evidence:>12.2f}"
              f"{evidence / wall:>15.2f}")


if __name__ == "__main__":
    main()
