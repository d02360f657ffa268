"""docs/pypto.md §4: mistakes that SIM on a CPU host accepts without a word (and some it does not).

Each attempt runs in its own process (some abort); "ran" means the call returned without an exception.
Usage: python docs/repro/sim_accepts.py
"""
import signal
import subprocess
import sys

from common import scratch, silenced

scratch("sim-accepts")
import pypto  # noqa: E402
import torch  # noqa: E402

SIM = {"run_mode": pypto.RunMode.SIM}
F32 = pypto.DT_FP32


@pypto.frontend.jit(runtime_options=SIM)
def fixed_shape(x: pypto.Tensor([32, 64], F32), out: pypto.Tensor([32, 64], F32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x + 1.0


@pypto.frontend.jit(runtime_options=SIM, debug_options={"runtime_debug_mode": 3})
def fixed_shape_checked(x: pypto.Tensor([32, 64], F32), out: pypto.Tensor([32, 64], F32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x + 1.0


@pypto.frontend.jit(runtime_options=SIM)
def view_past_end(x: pypto.Tensor([64, 64], F32), out: pypto.Tensor([32, 64], F32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = pypto.view(x, [32, 64], [48, 0]) + 1.0  # rows 48..79 of a 64-row tensor


def tiled(rows: int, cols: int):  # type: ignore[no-untyped-def]
    @pypto.frontend.jit(runtime_options=SIM)
    def tiled_add(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
        pypto.set_vec_tile_shapes(rows, cols)
        out[:] = x + 1.0

    return tiled_add


@pypto.frontend.jit(runtime_options=SIM)
def unaligned_tiles(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    pypto.set_vec_tile_shapes(8, 3)  # 3 fp32 = 12 bytes, not a multiple of 32
    out[:] = x + 1.0


def attempt(label: str, kernel, *args) -> None:  # type: ignore[no-untyped-def]
    try:
        with silenced():
            kernel(*args)
        print(f"{label}: ran", flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"{label}: {type(exc).__name__}: {' '.join(str(exc).split())[:110]}", flush=True)


half, big = torch.randn(32, 64).half(), torch.randn(64, 128)
ATTEMPTS = {
    "fp16 tensors for DT_FP32 annotations": lambda: attempt_args(fixed_shape, half, torch.zeros_like(half)),
    "fp16 call, then correct fp32 calls in the same process": lambda: [
        attempt_args(kernel, *args) for kernel, args in [(fixed_shape, (half, torch.zeros_like(half)))]
        + [(fixed_shape, (x, torch.zeros_like(x))) for x in [torch.randn(32, 64)] * 3]],
    "same, with runtime_debug_mode 3": lambda: attempt_args(fixed_shape_checked, half, torch.zeros_like(half)),
    "[64, 128] tensors for [32, 64] annotations": lambda: attempt_args(fixed_shape, big, torch.zeros_like(big)),
    "a view past the end of its tensor": lambda: attempt_args(view_past_end, torch.randn(64, 64), torch.zeros(32, 64)),
    "vec tiles 16 x 48 on [64, 128] (48 does not divide 128)": lambda: attempt_args(tiled(16, 48), big,
                                                                                   torch.zeros_like(big)),
    "vec tiles 24 x 64 on [64, 128] (24 does not divide 64)": lambda: attempt_args(tiled(24, 64), big,
                                                                                  torch.zeros_like(big)),
    "vec tiles 24 x 40 on [64, 128] (neither divides)": lambda: attempt_args(tiled(24, 40), big, torch.zeros_like(big)),
    "vec tiles 8 x 12 on [64, 128] (12 fp32 = 48 bytes)": lambda: attempt_args(tiled(8, 12), big, torch.zeros_like(big)),
    "vec tiles 8 x 3 on [64, 128] (3 fp32 = 12 bytes)": lambda: attempt_args(tiled(8, 3), big, torch.zeros_like(big)),
}
CURRENT = ""


def attempt_args(kernel, *args) -> None:  # type: ignore[no-untyped-def]
    attempt(CURRENT, kernel, *args)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        CURRENT = sys.argv[1]
        ATTEMPTS[CURRENT]()
    else:
        for label in ATTEMPTS:
            proc = subprocess.run([sys.executable, __file__, label], capture_output=True, text=True)
            if proc.returncode < 0:
                last = (proc.stderr.strip().splitlines() or [""])[-1]
                print(f"{proc.stdout.strip()}\n{label}: killed by {signal.Signals(-proc.returncode).name} "
                      f"(last stderr line: {last})".strip())
            else:
                print(proc.stdout.strip() or f"{label}: exit {proc.returncode}, nothing printed")
