"""A KernelBench task through `crosscheck run` against pypto's own compile + SIM + graph verify of it (issue 34).

    python bench/benchmark_tasks.py [--repeat 5] [--sizes 64x128 256x512 1024x1024]

Per task size, side by side and alternating: ours is `runtime.runner.run_submission` on the operator dir
through an already started warm parent (what `crosscheck run OPDIR` does with the run daemon up: intake,
lint, the sandboxed job, graph verify, the evidence checks, the verdict); the floor is a warm process of its own
that imported torch and pypto and loaded the calculator, timing the gym's verify steps in it: seed, inputs,
Model, ModelNew with the weights, one forward with graph verify on (pypto's compile, SIM and the tensor graph
on the CPU). The operator is the bias-relu task of tests/runtime/kernelbench_tasks.py.
Last line: `benchmark-tasks ratio=<median ours/floor> max=<worst size's median> sizes=<n>`.
"""
from __future__ import annotations

import sys

if sys.path and sys.path[0].rstrip("/").endswith("bench"):  # a bench file must not shadow the standard library
    sys.path.append(sys.path.pop(0))

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime.evidence import calculator  # noqa: E402
from runtime.intake.submission import load_task  # noqa: E402
from runtime.runner import RunOptions, run_submission  # noqa: E402
from runtime.warm import WarmParent  # noqa: E402
from tests.runtime import kernelbench_tasks as tasks  # noqa: E402

FLOOR = r'''
import importlib.util, json, sys, time
import torch, pypto
from pypto.frontend.parser.entry import JitCallableWrapper
from runtime.evidence import calculator, graph_verify
calculator.load(calculator.library_path(__import__("pathlib").Path(sys.argv[1])))
JitCallableWrapper._setup_verify_data = staticmethod(graph_verify._setup_verify_data_cpu)  # CPU tensors (docs/pypto.md §3)
def module(path):
    spec = importlib.util.spec_from_file_location(path.rsplit("/", 1)[1][:-3], path)
    mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)
    return mod
def verify(folder):
    sys.path.insert(0, folder)
    start = time.perf_counter()
    task = module(folder + "/task_desc.py")
    torch.manual_seed(42)
    init, xs = task.get_init_inputs(), task.get_inputs()
    model = task.Model(*init)
    impl = module(folder + "/BiasReLU_impl.py")
    new = module(folder + "/BiasReLU_pypto_impl.py").ModelNew(*init)
    new.load_state_dict(model.state_dict())
    with torch.no_grad():
        golden = model(*xs)
        kernel = impl.bias_relu_kernel
        kernel._verify_options = {"enable_pass_verify": True, "pass_verify_pass_filter": [],
                                  "pass_verify_error_tol": [1e-3, 1e-3]}
        pypto.set_verify_golden_data(goldens=[None, None, golden])
        out = new(*xs)
    took = time.perf_counter() - start
    assert torch.allclose(out, golden, rtol=1e-3, atol=1e-3), "the graph's result is not the golden"
    sys.path.remove(folder)
    return took
for line in sys.stdin:
    print("FLOOR_S", json.dumps(verify(line.strip())), flush=True)  # pypto prints to stdout too
'''

TASK = tasks.BIAS_RELU_TASK.replace("torch.randn(64, 128)", "torch.randn({rows}, {cols})").replace(
    "return [64, 128]", "return [{rows}, {cols}]")


def make(root: Path, rows: int, cols: int) -> Path:
    folder = tasks.write(root / f"{rows}x{cols}", "BiasReLU")
    (folder / "task_desc.py").write_text(TASK.replace("{rows}", str(rows)).replace("{cols}", str(cols)))
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", nargs="*", default=["64x128", "256x512", "1024x1024"])
    args = ap.parse_args()
    cache = calculator.default_cache_dir()
    if not calculator.status(cache)[0]:
        calculator.build(cache)
    tmp = Path(tempfile.mkdtemp(prefix="bench-tasks-"))
    folders = {s: make(tmp, *map(int, s.split("x"))) for s in args.sizes}
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp), "TILE_FWK_OUTPUT_DIR": str(tmp / "floor-out"),
           "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    floor = subprocess.Popen([sys.executable, "-c", FLOOR, str(cache)], cwd=tmp, env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    ratios: dict[str, list[float]] = {s: [] for s in args.sizes}
    with WarmParent("sim") as warm:
        for size, folder in folders.items():  # one untimed round each: imports and first compiles
            _ours(folder, warm, tmp, cache)
            _floor(floor, folder)
        for _ in range(args.repeat):
            for size, folder in folders.items():
                ours, base = _ours(folder, warm, tmp, cache), _floor(floor, folder)
                ratios[size].append(ours / base)
                print(f"{size}: ours {ours:.2f} s, floor {base:.2f} s, ratio {ours / base:.2f}", flush=True)
    floor.stdin.close()  # type: ignore[union-attr]
    floor.wait(60)
    medians = {s: statistics.median(r) for s, r in ratios.items()}
    for size, m in medians.items():
        print(f"{size}: median ratio {m:.2f} over {len(ratios[size])} rounds")
    print(f"benchmark-tasks ratio={statistics.median(medians.values()):.2f} max={max(medians.values()):.2f} "
          f"sizes={len(medians)}")


def _ours(folder: Path, warm: WarmParent, tmp: Path, cache: Path) -> float:
    start = time.perf_counter()
    sub = load_task(folder)
    with tempfile.TemporaryDirectory(dir=tmp) as work:
        report = run_submission(folder, RunOptions(cache_dir=cache, work_dir=Path(work)), warm=warm, loaded=sub)
    took = time.perf_counter() - start
    assert [c.verdict for c in report.cases] == ["sim_garbage_graph_ok"], [c.verdict for c in report.cases]
    return took


def _floor(proc: subprocess.Popen, folder: Path) -> float:  # type: ignore[type-arg]
    proc.stdin.write(f"{folder}\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    while True:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit(f"the floor process died (exit {proc.wait()})")
        if line.startswith("FLOOR_S "):
            return float(json.loads(line.split(" ", 1)[1]))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
