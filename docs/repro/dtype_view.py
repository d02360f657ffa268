"""docs/pypto.md §3: the calculator on a dtype view of a tensor partially valid in its last dimension.

`python docs/repro/dtype_view.py`. Our kernel views an int8 `[16, 32]` input with valid shape `[V, W]`,
reinterprets it as fp32 (`pypto.view(t, dtype=pypto.DT_FP32)`, a `[16, 8]` tile), adds 0 and writes it out.
The right result holds the input's fp32 values in the valid region: rows 0..V-1, columns 0..W/4-1. It runs in
SIM with graph verify (our CPU fix), so the output is the calculator's result; for each (V, W) it prints which
rows came back right and which came back zero. Each shape runs in its own process (one compile per jit).
"""
import subprocess
import sys

from common import load_calculator, scratch, silenced

ROWS = 16
SHAPES = [(16, 32), (14, 32), (16, 16), (14, 16), (8, 16), (14, 24), (16, 8)]


def one(valid_rows: int, valid_bytes: int) -> None:
    scratch("dtype-view")
    import pypto
    import torch

    from graph_verify import install_fix

    load_calculator()
    install_fix()

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM},
                        verify_options={"enable_pass_verify": True, "pass_verify_pass_filter": []})
    def as_fp32(x: pypto.Tensor([ROWS, 32], pypto.DT_INT8), out: pypto.Tensor([ROWS, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 32)
        part = pypto.view(x, [ROWS, 32], [0, 0], valid_shape=[valid_rows, valid_bytes])
        pypto.assemble(pypto.add(pypto.view(part, dtype=pypto.DT_FP32), 0), [0, 0], out)

    torch.manual_seed(0)
    values = torch.rand(ROWS, 8) + 1  # no zeros: a zero in the output is the calculator's
    out = torch.zeros(ROWS, 8)
    pypto.set_verify_golden_data(goldens=[None, None])
    with silenced():
        as_fp32(values.view(torch.int8).clone(), out)
    cols = valid_bytes // 4
    right = [r for r in range(valid_rows) if torch.equal(out[r, :cols], values[r, :cols])]
    zero = [r for r in range(valid_rows) if not out[r, :cols].any()]
    print(f"valid shape [{valid_rows:2}, {valid_bytes:2}] of [16, 32] int8 -> fp32 [16, 8] valid [{valid_rows}, {cols}]: "
          f"{len(right)} of {valid_rows} valid rows right ({_span(right)}), {len(zero)} zero ({_span(zero)})")


def _span(rows: list) -> str:  # type: ignore[type-arg]
    return f"rows {rows[0]}..{rows[-1]}" if rows else "none"


if __name__ == "__main__":
    if len(sys.argv) == 3:
        one(int(sys.argv[1]), int(sys.argv[2]))
    else:
        for v, w in SHAPES:
            subprocess.run([sys.executable, __file__, str(v), str(w)], check=False)
