"""docs/pypto.md §10: where graph verify's memory goes, one call of a row-walking fp16 rms_norm in a bare process.

Usage: python docs/repro/graph_verify_memory.py ROWS [HIDDEN] [OPTION=JSON ...]
  e.g. python docs/repro/graph_verify_memory.py 512 3072
       python docs/repro/graph_verify_memory.py 512 3072 enable_pass_verify=false
       python docs/repro/graph_verify_memory.py 512 3072 pass_verify_save_tensor=true 'pass_verify_save_tensor_dir="/tmp/t"'
The kernel walks 8 rows per pypto.loop iteration; the call runs in a child process whose resident memory this
process polls from /proc (pypto holds the GIL through the call, so a thread inside it would not sample). Prints the
child's base and peak MiB and the largest |diff| of the output against the golden (0.0039 with graph verify on:
the graph's result; garbage without).
"""
import json
import subprocess
import sys
import time

from common import load_calculator, scratch
from graph_verify import install_fix

TILE = 8


def child(rows: int, hidden: int, options: dict) -> None:
    import os

    os.chdir(scratch("graph-verify-memory"))  # before pypto's import: it reads the dirs then
    import pypto
    import torch

    load_calculator()
    install_fix()
    verify = {"enable_pass_verify": True, "pass_verify_pass_filter": [], **options}

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM}, verify_options=verify)
    def rms(x: pypto.Tensor([], pypto.DT_FP16), gamma: pypto.Tensor([], pypto.DT_FP16),
            out: pypto.Tensor([], pypto.DT_FP16)):
        pypto.set_vec_tile_shapes(1, TILE, hidden)
        for i in pypto.loop(x.shape[1] // TILE, name="ROWS", idx_name="i"):
            part = pypto.cast(pypto.view(x, [1, TILE, hidden], [0, i * TILE, 0]), pypto.DT_FP32)
            mean_sq = pypto.sum(part * part, dim=-1, keepdim=True) / float(hidden)
            y = part / pypto.sqrt(mean_sq + 1e-6) * pypto.cast(gamma, pypto.DT_FP32)
            pypto.assemble(pypto.cast(y, pypto.DT_FP16), [0, i * TILE, 0], out)

    torch.manual_seed(0)
    x, gamma = torch.randn(1, rows, hidden, dtype=torch.float16), torch.randn(hidden, dtype=torch.float16)
    out = torch.zeros_like(x)
    xf = x.float()
    golden = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma.float()).half()
    pypto.set_verify_golden_data(goldens=[None, None, golden])
    rms(x, gamma, out)
    print(json.dumps({"max_diff": float((out.float() - golden.float()).abs().max())}), flush=True)


def rss_mib(pid: int) -> int:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def main() -> None:
    if sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]))
        return
    rows, hidden = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 and "=" not in sys.argv[2] else 3072
    options = {k: json.loads(v) for k, v in (a.split("=", 1) for a in sys.argv[2:] if "=" in a)}
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(rows), str(hidden), json.dumps(options)],
                            stdout=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, rss_mib(proc.pid))
        time.sleep(0.25)
    lines = proc.stdout.read().splitlines() if proc.stdout else []
    print(f"x [1, {rows}, {hidden}] fp16 ({rows * hidden * 2 / 2**20:.2f} MiB), {rows // TILE} iterations, "
          f"options {options}: peak {peak} MiB; {lines[-1] if lines else 'no output'}")


if __name__ == "__main__":
    main()
