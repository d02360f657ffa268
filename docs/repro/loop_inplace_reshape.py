"""docs/pypto.md §3: the calculator on a loop-carried local tensor read inside its loop (a reshape, an add).

`python docs/repro/loop_inplace_reshape.py [--passes]`. Our kernel walks x in 4 blocks of 16 rows
(`pypto.loop`), writes each block doubled into a local `buf` made before the loop (`pypto.assemble`), and
gives `buf` to the output in one of several ways. The right output holds every block doubled. It runs in
SIM with graph verify (our CPU fix), so the output is the calculator's result; for each way it prints which
blocks came back right and which came back zero. `--passes` also verifies pypto's lowered passes against
its tensor graph and prints their CSV rows. Each way runs in its own process (one compile per jit).
"""
import subprocess
import sys

from common import load_calculator, scratch, silenced

BLOCKS, ROWS, COLS = 4, 16, 32
WAYS = {
    "assemble each block into out": "direct",
    "out[:] = reshape(buf), inside the loop": "reshape",
    "out[:] = reshape(buf + 0), inside the loop": "add_reshape",
    "out[:] = reshape(buf, inplace=True), after the loop": "inplace_after",
    "assemble(reshape(block, inplace=True)), a block made in the iteration": "inplace_local",
    "out[:] = reshape(buf, inplace=True), inside the loop": "inplace_carried",
}


def one(way: str, passes: bool) -> None:
    scratch("loop-inplace-reshape")
    import pypto
    import torch

    from graph_verify import csv_rows, install_fix

    load_calculator()
    install_fix()
    verify = {"enable_pass_verify": True} if passes else {"enable_pass_verify": True, "pass_verify_pass_filter": []}

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM}, verify_options=verify)
    def double_blocks(x: pypto.Tensor([BLOCKS * ROWS, COLS], pypto.DT_FP32),
                      out: pypto.Tensor([BLOCKS, ROWS, COLS], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 32)
        buf = pypto.tensor([BLOCKS * ROWS, COLS], pypto.DT_FP32, "buf")
        for i in pypto.loop(0, BLOCKS, 1, name="BLOCKS", idx_name="i"):
            block = pypto.mul(pypto.view(x, [ROWS, COLS], [i * ROWS, 0]), 2.0)
            if way == "direct":
                pypto.assemble(pypto.reshape(block, [1, ROWS, COLS]), [i, 0, 0], out)
            elif way == "inplace_local":
                pypto.assemble(pypto.reshape(block, [1, ROWS, COLS], inplace=True), [i, 0, 0], out)
            else:
                pypto.assemble(block, [i * ROWS, 0], buf)
                if way == "add_reshape":
                    out[:] = pypto.reshape(pypto.add(buf, 0.0), [BLOCKS, ROWS, COLS])
                elif way == "reshape":
                    out[:] = pypto.reshape(buf, [BLOCKS, ROWS, COLS])
                elif way == "inplace_carried":
                    out[:] = pypto.reshape(buf, [BLOCKS, ROWS, COLS], inplace=True)
        if way == "inplace_after":
            out[:] = pypto.reshape(buf, [BLOCKS, ROWS, COLS], inplace=True)

    torch.manual_seed(0)
    x = torch.rand(BLOCKS * ROWS, COLS) + 1  # no zeros: a zero block is the calculator's
    out = torch.full((BLOCKS, ROWS, COLS), -7.0)  # -7: never written
    golden = (x * 2).view(BLOCKS, ROWS, COLS)
    pypto.set_verify_golden_data(goldens=[None, golden])
    with silenced():
        double_blocks(x, out)
    state = ["right" if torch.equal(out[b], golden[b]) else "zero" if not out[b].any()
             else "unwritten" if (out[b] == -7).all() else "other" for b in range(BLOCKS)]
    label = next(k for k, v in WAYS.items() if v == way)
    print(f"{label}: blocks {', '.join(f'{b} {s}' for b, s in enumerate(state))}")
    for row in csv_rows() if passes else []:
        print(f"  {row.get('passName')} vs {row.get('referPassName')} {row.get('loopInfo')}: "
              f"{row.get('verifyResult')} max |diff| {row.get('maxAbsDiff')}")


if __name__ == "__main__":
    with_passes = "--passes" in sys.argv
    if len(sys.argv) > 1 and sys.argv[1] in WAYS.values():
        one(sys.argv[1], with_passes)
    else:
        for name in WAYS.values():
            subprocess.run([sys.executable, __file__, name] + (["--passes"] if with_passes else []), check=False)
