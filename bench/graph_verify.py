"""Graph verify costs, side by side in one run (issue 3 targets).

    python bench/graph_verify.py [--repeat 3] [--skip-stock]

1. First verify in a fresh process: stock pypto 0.2.0 (builds its calculator with cmake, ~1 min)
   against our cached calculator (ctypes load). Target: cached at least 30x cheaper.
2. A small SIM case with and without graph verify, as warm jobs. Target: at most +50%.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.evidence.calculator import default_cache_dir  # noqa: E402
from runtime.runner import RunOptions, run_submission  # noqa: E402
from runtime.warm import WarmParent  # noqa: E402

FIRST_VERIFY = r'''
import json, sys, time
import torch, pypto
mode, cache = sys.argv[1], sys.argv[2]
if mode == "cached":
    from pathlib import Path
    from runtime.evidence import calculator, graph_verify
    from pypto.frontend.parser.entry import JitCallableWrapper
    t0 = time.perf_counter()
    calculator.load(calculator.library_path(Path(cache)))
    graph_verify._STOCK_SETUP = JitCallableWrapper._setup_verify_data
    JitCallableWrapper._setup_verify_data = staticmethod(graph_verify._setup_verify_data_cpu)
    load_s = time.perf_counter() - t0
else:
    load_s = 0.0

@pypto.frontend.jit(verify_options={"enable_pass_verify": True, "pass_verify_pass_filter": []})
def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x * 2.0

x = torch.randn(32, 64)
out = torch.zeros(32, 64)
pypto.set_verify_golden_data(goldens=[None, x * 2.0])
t = time.perf_counter()
k(x, out)
call_s = time.perf_counter() - t
print(json.dumps({"first_verify_s": load_s + call_s, "max_abs_diff": float((out - x * 2.0).abs().max())}))
'''


def first_verify(mode: str, cache: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"PATH": os.environ["PATH"], "HOME": tmp, "TILE_FWK_OUTPUT_DIR": tmp + "/o",
               "ASCEND_PROCESS_LOG_PATH": tmp + "/log", "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
        script = Path(tmp) / "first_verify.py"  # pypto reads the kernel's source file
        script.write_text(FIRST_VERIFY)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, str(script), mode, str(cache)], env=env, cwd=tmp,
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{mode} first verify failed:\n{out.stderr[-3000:]}")
        total = time.perf_counter() - start
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_s"] = total
    return result


def job(example: Path, parent: WarmParent, cache: Path, graph: bool) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        report = run_submission(example, RunOptions(graph_verify=graph, cache_dir=cache, work_dir=Path(work)),
                                warm=parent)
    want = "sim_garbage_graph_ok" if graph else "sim_output_unwritten"
    assert all(c.verdict == want for c in report.cases), [(c.verdict, c.verdict_reason) for c in report.cases]
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-stock", action="store_true")
    ap.add_argument("--examples", nargs="*", default=["scale_add", "relu", "softmax", "matmul", "dynamic_add"])
    args = ap.parse_args()
    cache = default_cache_dir()
    from runtime.evidence import calculator

    calculator.build(cache)
    print("1. first graph verify in a fresh process")
    cached = first_verify("cached", cache)
    print(f"   cached calculator : first verify {cached['first_verify_s']:7.2f} s   (process {cached['process_s']:.2f} s,"
          f" max diff {cached['max_abs_diff']:.2g})")
    if not args.skip_stock:
        stock = first_verify("stock", cache)
        print(f"   stock pypto 0.2.0 : first verify {stock['first_verify_s']:7.2f} s   (process {stock['process_s']:.2f} s,"
              f" max diff {stock['max_abs_diff']:.2g}: stock runs the graph on zeros)")
        print(f"   ratio stock/cached: {stock['first_verify_s'] / cached['first_verify_s']:.0f}x")
    print("2. small SIM case, warm job, with and without graph verify")
    print(f"   {'example':<12}{'cases':>6}{'plain SIM s':>13}{'SIM+graph s':>13}{'added':>8}")
    with WarmParent("sim") as parent:
        for name in args.examples:
            example = REPO / "examples" / name
            plain, graph = [], []
            for _ in range(args.repeat):
                plain.append(job(example, parent, cache, False))
                graph.append(job(example, parent, cache, True))
            p, g = statistics.median(plain), statistics.median(graph)
            cases = len(json.loads((example / "test_cases.json").read_text())["test_cases"])
            print(f"   {name:<12}{cases:>6}{p:>13.2f}{g:>13.2f}{(g / p - 1) * 100:>7.0f}%")


if __name__ == "__main__":
    main()
