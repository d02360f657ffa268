"""docs/pypto.md §1: how pypto 0.2.0 picks SIM or NPU on a CPU host, and what NPU mode does here."""
import os
import subprocess
import sys
from pathlib import Path

from common import inputs, scale_add, scratch

root = scratch("run-modes")

# 1. ASCEND_HOME_PATH changes which shared libraries `import pypto` loads.
probe = subprocess.run([sys.executable, "-c", "import pypto"], capture_output=True, text=True,
                       env={**os.environ, "ASCEND_HOME_PATH": "/nonexistent/ascend"})
last = (probe.stderr.strip().splitlines() or ["(no stderr)"])[-1]
print(f"import pypto with ASCEND_HOME_PATH set: exit {probe.returncode}: {last}")

import pypto  # noqa: E402
import torch  # noqa: E402


def plain(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x + 1.0


# 2. Without run_mode the decorator picks the mode when it runs (at import for module-level kernels).
bound_early = pypto.frontend.jit(plain)
os.environ["ASCEND_HOME_PATH"] = "/nonexistent/ascend"  # only read by the decorator from here on
bound_late = pypto.frontend.jit(plain)
del os.environ["ASCEND_HOME_PATH"]
names = {m.value: m.name for m in pypto.RunMode}
print("decorated without ASCEND_HOME_PATH:", names[bound_early._runtime_options["run_mode"]])
print("decorated with ASCEND_HOME_PATH:   ", names[bound_late._runtime_options["run_mode"]],
      "(the first kernel still says", names[bound_early._runtime_options["run_mode"]] + ")")

# 3. NPU mode with CPU tensors fails at the first call, before anything is compiled.
x, y = inputs()
before = len(list(Path(root, "output").iterdir()))
try:
    scale_add("npu")(x, y, torch.zeros_like(x))
    print("NPU mode with CPU tensors: no error")
except Exception as exc:  # noqa: BLE001 - we print whatever pypto raises
    print(f"NPU mode with CPU tensors: {type(exc).__name__}: {exc}")
print("output folders written by that call:", len(list(Path(root, "output").iterdir())) - before)

# 4. pypto itself never reads TILE_FWK_DEVICE_ID (test scripts do).
pkg = Path(pypto.__file__).parent
hits = [p.name for p in pkg.rglob("*") if p.is_file() and b"TILE_FWK_DEVICE_ID" in p.read_bytes()]
print("files in the pypto package that mention TILE_FWK_DEVICE_ID:", hits or "none")
