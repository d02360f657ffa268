"""docs/SECURITY.md: the call folders the harness counts launches by.

Calls one kernel three times (SIM), then a kernel that fails to compile, and lists after each call
what `pypto.pypto_impl.LogTopFolder()` names and what that folder holds: every successful call has
its own folder with kernel_aicore/ (made by code generation), program.json, an ELF object under
kernel_aicpu/ and the cost model's swim file; a failed compile's folder has none of them.
"""
from pathlib import Path

from common import inputs, scale_add, scratch, silenced

ELF = b"\x7fELF"


def describe(folder: Path) -> str:
    aicpu = folder / "kernel_aicpu"
    elf = any(p.read_bytes()[:4] == ELF for p in aicpu.iterdir() if p.is_file()) if aicpu.is_dir() else False
    swim = (folder / "CostModelSimulationOutput" / "_simulate.swim.json").is_file()
    return (f"kernel_aicore/={(folder / 'kernel_aicore').is_dir()} program.json={(folder / 'program.json').is_file()} "
            f"elf_in_kernel_aicpu={elf} swim={swim}")


def main() -> None:
    root = scratch("call-folders")
    import pypto
    import torch

    kernel = scale_add()
    x, y = inputs()
    for call in range(3):
        with silenced():
            kernel(x, y, torch.zeros_like(x))
        folder = Path(pypto.pypto_impl.LogTopFolder())
        print(f"call {call}: {folder.name} {describe(folder)}")

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def no_tiles(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
        out[:] = x * 2.0  # no set_vec_tile_shapes: fails to compile (docs/pypto.md §4)

    try:
        with silenced():
            no_tiles(x, torch.zeros_like(x))
    except Exception as exc:  # noqa: BLE001 - the failure is the point
        folder = Path(pypto.pypto_impl.LogTopFolder())
        print(f"failed call ({type(exc).__name__}): {folder.name} {describe(folder)}")
    folders = sorted(p.name for p in (root / "output").iterdir())
    print(f"{len(folders)} folders under TILE_FWK_OUTPUT_DIR for 4 calls")


if __name__ == "__main__":
    main()
