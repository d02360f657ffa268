"""docs/realops.md §9: the graph-verify calculator rounds every op of a bf16 kernel to bf16.

`python docs/repro/bf16_rounding.py [--passes]`. A bf16 kernel of ours, out = silu(x @ w1) @ w2 with silu
spelled out as a / (1 + exp(-a)), runs in SIM with graph verify (our CPU fix). Its output is compared with
torch computing the same graph op by op in bf16, and with a reference that computes the activation in fp32
and rounds once. `--passes` also verifies pypto's lowered passes against its tensor graph (their CSV rows).
"""
import math
import sys

from common import load_calculator, scratch, silenced

scratch("bf16")
import pypto  # noqa: E402
import torch  # noqa: E402

from graph_verify import csv_rows, install_fix  # noqa: E402

load_calculator()
install_fix()
ROWS, MID, COLS = 16, 256, 64
VERIFY = {"enable_pass_verify": True} if "--passes" in sys.argv else {"enable_pass_verify": True,
                                                                      "pass_verify_pass_filter": []}


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM}, verify_options=VERIFY)
def mlp(x: pypto.Tensor([], pypto.DT_BF16), w1: pypto.Tensor([], pypto.DT_BF16),
        w2: pypto.Tensor([], pypto.DT_BF16), out: pypto.Tensor([], pypto.DT_BF16)):
    pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
    pypto.set_vec_tile_shapes(16, 64)
    a = pypto.matmul(x, w1, pypto.DT_BF16)
    denom = pypto.add(pypto.exp(pypto.mul(a, -1.0)), 1.0)
    act = pypto.div(a, denom)
    out.move(pypto.matmul(act, w2, pypto.DT_BF16))


def report(name, got, want):  # type: ignore[no-untyped-def]
    got, want = got.float(), want.float()
    diff = (got - want).abs()
    outside = (diff > 3e-3 + 3e-3 * want.abs()).float().mean().item()
    print(f"{name}: max |diff| {diff.max().item():.4g}, identical {(got == want).float().mean().item():.2%}, "
          f"outside rtol=atol=3e-3 {outside:.1%}, largest |value| {want.abs().max().item():.4g}")


torch.manual_seed(7)
bf = torch.bfloat16
x = torch.randn(ROWS, MID, dtype=bf) / 4
w1 = torch.randn(MID, MID, dtype=bf) / 4
w2 = torch.randn(MID, COLS, dtype=bf) / 4
out = torch.zeros(ROWS, COLS, dtype=bf)
with silenced():
    mlp(x, w1, w2, out)
a = x @ w1
per_op = (a / ((a * -1.0).to(bf).exp().to(bf) + 1.0).to(bf)).to(bf) @ w2
fp32_act = (a.float() * torch.sigmoid(a.float())).to(bf) @ w2
report("calculator vs torch op by op in bf16", out, per_op)
report("calculator vs activation in fp32, rounded once", out, fp32_act)
for row in csv_rows():
    if row.get("referPassName") != "golden":
        print(f"  {row.get('passName')} vs {row.get('referPassName')}: {row.get('verifyResult')}, "
              f"max |diff| {row.get('maxAbsDiff')}")
