"""Floats read from a launch's output and the asserts they decide (runtime/evidence/flow.py), on real torch.

The checks run as script code (compiled here, not rewritten by pytest's assertion rewriting)."""
from __future__ import annotations

import torch

from runtime.evidence import flow

SCRIPT = '''
max_diff = (out - golden).abs().max().item()
is_kernel_float = isinstance(max_diff, KernelFloat) and max_diff.launch == 3
assert max_diff < 1.0, "Result mismatch!"
try:
    assert 0.1 > max_diff  # reflected: judged as max_diff < 0.1
    raised = False
except AssertionError:
    raised = True
assert out.max().item() >= 2
assert max_diff < 1.0 and max_diff < 0.9, "both"  # the true conjunct decides nothing; the last compare does
try:
    assert max_diff < 0.2 and max_diff < 0.9  # a false conjunct raises: it decided the assert
except AssertionError:
    pass
'''

CLAIMS_NOTHING = '''
golden_diff = (golden - golden * 1.0).abs().max().item()
assert type(golden_diff) is float and golden_diff < 1.0
if (out - golden).abs().max().item() < 1.0:  # decides no assert
    pass
ok = (out - golden).abs().max().item() < 1.0  # the assert reads a bool, not the compare
assert ok
assert not (out - golden).abs().max().item() > 1.0  # the jump reads `not`, not the compare
with suspended():  # inside a launch: pypto's own reads are not the script's
    inside = out.max().item()
    assert inside < 10.0
'''


def run(source: str) -> tuple[dict, list[tuple]]:
    seen: list[tuple] = []
    record = flow.start()
    out, golden = torch.full((4,), 2.0), torch.full((4,), 2.5)
    record.mark(out, 3)  # as the instrumentation does for what launch 3 wrote
    scope = {"out": out, "golden": golden, "KernelFloat": flow.KernelFloat, "suspended": flow.suspended}
    with record, flow.ScalarTaint(record, lambda v, op, bound, held, where: seen.append((v.launch, op, bound, held))):
        exec(compile(source, "script.py", "exec"), scope)
    return scope, seen


def test_an_assert_on_a_float_read_from_a_kernel_output_is_reported_with_its_result():
    scope, seen = run(SCRIPT)
    assert scope["is_kernel_float"] and scope["raised"]
    assert seen == [(3, "<", 1.0, True), (3, "<", 0.1, False), (3, ">=", 2, True), (3, "<", 0.9, True),
                    (3, "<", 0.2, False)]


def test_golden_values_ifs_and_launch_internals_claim_nothing():
    scope, seen = run(CLAIMS_NOTHING)
    assert type(scope["inside"]) is float
    assert seen == []
