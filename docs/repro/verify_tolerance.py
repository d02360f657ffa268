"""docs/pypto.md §3 and §6: the formula graph verify uses to call an element wrong, and its default tolerance.

The kernel copies x (every element exactly 1000.0). Two goldens sit just beside it, chosen so that three
candidate formulas disagree (rtol = atol = 1e-3, no pass_verify_error_tol given):
  mean of both:     |o - g| > atol + rtol * (|o| + |g|) / 2
  golden as ref:    |o - g| > atol + rtol * |g|          (torch.allclose(out, golden))
  output as ref:    |o - g| > atol + rtol * |o|
"""
from common import load_calculator, scratch, silenced

scratch("verify-tolerance")
import pypto  # noqa: E402
import torch  # noqa: E402
from graph_verify import csv_rows, install_fix  # noqa: E402

load_calculator()
install_fix()


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM},
                    verify_options={"enable_pass_verify": True, "pass_verify_pass_filter": []})
def copy(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x * 1.0


RTOL = ATOL = 1e-3
x = torch.full((32, 64), 1000.0)
for delta in (+1.0018, -1.0008):
    golden = x + delta
    o, g = 1000.0, float(golden[0, 0])
    predicted = {"mean of both": abs(o - g) > ATOL + RTOL * (abs(o) + abs(g)) / 2,
                 "golden as ref": abs(o - g) > ATOL + RTOL * abs(g),
                 "output as ref": abs(o - g) > ATOL + RTOL * abs(o)}
    pypto.set_verify_golden_data(goldens=[None, golden])
    with silenced():
        copy(x, torch.zeros_like(x))
    row = csv_rows()[0]
    print(f"golden = 1000 {delta:+}: pypto says {row['verifyResult']} (rtol {row['rtol']}, atol {row['atol']}, "
          f"errorCount {row['errorCount']}); a formula flags it: "
          + ", ".join(f"{name} {'yes' if wrong else 'no'}" for name, wrong in predicted.items()))
