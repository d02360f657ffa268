"""docs/pypto.md §8: what real pypto-gym style operators run into on pypto 0.2.0 on a CPU host.

Usage: python docs/repro/gym_quirks.py [--skip-big]
The other checks run kernels in child processes: partial tiles under graph verify (needs the calculator, see
calculator.py), and a [1, 64, 256, 256] fp32 SIM case with and without an 8 GiB RLIMIT_AS.
"""
import resource
import subprocess
import sys
import time

from common import load_calculator, scratch, silenced

scratch("gym-quirks")


def api_skew() -> None:
    import pypto

    probe = subprocess.run([sys.executable, "-c", "import torch_npu"], capture_output=True, text=True)
    print("import torch_npu:", (probe.stderr.strip().splitlines() or ["ok"])[-1])
    print("pypto.platform.npuarch:", pypto.platform.npuarch)
    for name in ("PrecisionType", "loop_unroll", "experimental.set_operation_options"):
        obj = pypto
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
            print(f"pypto.{name}: exists")
        except AttributeError as exc:
            print(f"pypto.{name}: AttributeError: {exc}")
    for value in ({"DEFAULT": 2}, {0: 2}):
        try:
            pypto.set_pass_options(vec_nbuffer_setting=value)
            print(f"set_pass_options(vec_nbuffer_setting={value!r}): accepted")
        except Exception as exc:  # noqa: BLE001
            print(f"set_pass_options(vec_nbuffer_setting={value!r}): {type(exc).__name__}: "
                  f"{' '.join(str(exc).split())[:120]}")


def partial_tile(op: str) -> None:
    """[1, 16384] in 16 x 512 views (pypto.loop + view + assemble): each tile has 1 valid row of 16."""
    import pypto
    import torch
    from graph_verify import csv_rows, install_fix

    load_calculator()
    install_fix()
    verify = {"enable_pass_verify": True, "pass_verify_pass_filter": []}

    def tiled(op):  # type: ignore[no-untyped-def]
        @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM}, verify_options=verify)
        def kernel(x: pypto.Tensor([1, 16384], pypto.DT_FP32), out: pypto.Tensor([1, 16384], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(16, 512)
            for c in pypto.loop(32, name="COLS", idx_name="c"):
                tile = pypto.view(x, [16, 512], [0, c * 512], valid_shape=[1, 512])
                pypto.assemble(op(tile), [0, c * 512], out)

        return kernel

    add_one, sigmoid = tiled(lambda t: t + 1.0), tiled(pypto.sigmoid)
    x = torch.randn(1, 16384)
    kernel, golden = (add_one, x + 1) if op == "add" else (sigmoid, torch.sigmoid(x))
    label = f"partial tiles, graph verify, {'x + 1' if op == 'add' else 'pypto.sigmoid(x)'}"
    pypto.set_verify_golden_data(goldens=[None, golden])
    try:
        with silenced():
            kernel(x, torch.zeros_like(x))
        print(f"{label}: returned; CSV: {[r['verifyResult'] for r in csv_rows()]}")
    except Exception as exc:  # noqa: BLE001
        text = " ".join(str(exc).split())
        print(f"{label}: {type(exc).__name__}: ...{text[text.find('setStorage'):][:170]}")


def big_case(limit_gib: int, verify: bool) -> None:
    import pypto
    import torch

    if verify:
        from graph_verify import install_fix

        load_calculator()
        install_fix()
    if limit_gib:
        resource.setrlimit(resource.RLIMIT_AS, (limit_gib << 30, limit_gib << 30))

    options = {"enable_pass_verify": True, "pass_verify_pass_filter": []} if verify else None

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM}, verify_options=options)
    def scale(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 1, 16, 256)  # 1024 tasks
        out[:] = x * 2.0

    x = torch.randn(1, 64, 256, 256)
    if verify:
        pypto.set_verify_golden_data(goldens=[None, x * 2])
    start = time.perf_counter()
    label = (f"[1, 64, 256, 256] SIM{' + graph verify' if verify else ''}, "
             f"RLIMIT_AS {f'{limit_gib} GiB' if limit_gib else 'unlimited'}")
    try:
        with silenced():
            scale(x, torch.zeros_like(x))
        status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
        peak = {k: f"{int(status[k].split()[0]) / 2**20:.1f} GiB" for k in ("VmPeak", "VmHWM")}
        print(f"{label}: ran in {time.perf_counter() - start:.0f} s; peak address space {peak['VmPeak']}, "
              f"peak resident {peak['VmHWM']}", flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"{label}: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}", flush=True)


def in_child(*args: str) -> None:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    out = proc.stdout.strip()
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        out = f"{out}\n{args}: exit {proc.returncode}, last stderr line: {last}".strip()
    print(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["partial"]:
        partial_tile(sys.argv[2])
    elif sys.argv[1:2] == ["big"]:
        big_case(int(sys.argv[2]), sys.argv[3:4] == ["verify"])
    else:
        api_skew()
        in_child("partial", "add")
        in_child("partial", "sigmoid")
        if "--skip-big" not in sys.argv:
            for verify in ("plain", "verify"):
                in_child("big", "8", verify)
                in_child("big", "0", verify)
