"""A plain pypto-gym style test for an operator package, as a user runs it today (cold).

    python bench/gym_test.py examples/softmax --run_mode sim

It imports the package's impl and golden, draws inputs with torch.manual_seed(seed) + torch.randn,
runs every case, and compares like a gym test. Used by bench/runtime_overhead.py as the baseline.
"""
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


def main() -> int:
    pkg = Path(sys.argv[1])
    mode = sys.argv[sys.argv.index("--run_mode") + 1] if "--run_mode" in sys.argv else "npu"
    spec = json.loads((pkg / "test_cases.json").read_text())
    op = spec["op_name"]
    sys.path.insert(0, str(pkg))
    wrapper = load(next(pkg.glob("*_impl.py")), f"{op}_wrapper")
    golden_fn = load(next(pkg.glob("*_golden.py")), f"{op}_golden")
    for case in spec["test_cases"]:
        torch.manual_seed(case["seed"])
        inputs = case.get("inputs") or [case["input"]]
        xs = [torch.randn(i["shape"], dtype=DTYPES[i.get("dtype", "float32")]) for i in inputs]
        golden = golden_fn(*xs)
        result = wrapper(*xs)
        diff = float(np.abs(result.float().numpy() - golden.float().numpy()).max())
        if mode == "npu":
            np.testing.assert_allclose(result.float().numpy(), golden.float().numpy(), case.get("rtol", 1e-3),
                                       case.get("atol", 1e-3))
        print(f"[{'PRECISION_PASS' if mode == 'npu' else 'SIM_DONE'}] {case['id']} Max diff: {diff:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
