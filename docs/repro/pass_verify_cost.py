"""docs/pypto.md §3: the cost of checking every lowered pass, against checking the tensor graph only.

Usage: python docs/repro/pass_verify_cost.py [ITERATIONS]   (default 32)
A loop kernel adds two [16 * ITERATIONS, 64] tensors 16 rows at a time; each filter runs in its own process
with the CPU-tensor fix of graph_verify.py.
"""
import subprocess
import sys
import time
from pathlib import Path

from common import load_calculator, scratch, silenced
from graph_verify import csv_rows, install_fix

ROWS, COLS = 16, 64


def child(iterations: int, every_pass: bool) -> None:
    root = scratch("pass-verify")
    import pypto
    import torch

    load_calculator()
    install_fix()
    verify = {"enable_pass_verify": True}
    if not every_pass:
        verify["pass_verify_pass_filter"] = []

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM}, verify_options=verify)
    def looped_add(x: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
                   y: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
                   out: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(ROWS, COLS)
        for i in pypto.loop(x.shape[0] // ROWS, name="ROW_LOOP", idx_name="i"):
            part = pypto.view(x, [ROWS, COLS], [i * ROWS, 0]) + pypto.view(y, [ROWS, COLS], [i * ROWS, 0])
            pypto.assemble(part, [i * ROWS, 0], out)

    x, y = torch.randn(ROWS * iterations, COLS), torch.randn(ROWS * iterations, COLS)
    pypto.set_verify_golden_data(goldens=[None, None, x + y])
    start = time.perf_counter()
    with silenced():
        looped_add(x, y, torch.zeros_like(x))
    took = time.perf_counter() - start
    rows = csv_rows()
    size = sum(p.stat().st_size for p in Path(root, "output").rglob("*") if p.is_file())
    results = sorted({r["verifyResult"] for r in rows})
    print(f"{'every lowered pass' if every_pass else 'tensor graph only '}: {took:5.1f} s, "
          f"output folder {size / 1e6:6.1f} MB, {len(rows)} CSV rows {results}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(int(sys.argv[2]), sys.argv[3] == "all")
    else:
        n = int(sys.argv[1]) if len(sys.argv) > 1 else 32
        print(f"{n} loop iterations")
        for which in ("graph", "all"):
            subprocess.run([sys.executable, __file__, "child", str(n), which], check=False)
