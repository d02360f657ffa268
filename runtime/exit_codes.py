"""The exit codes of `crosscheck run` and `crosscheck submit`, and the words that go with them.

| code | meaning |
|------|---------|
| 0    | acceptable: every case got an acceptable verdict for its mode (`inconclusive` in either: a compare that cannot tell a correct kernel from garbage is no defect, docs/realops.md §11) |
| 1    | kernel defect: at least one case shows the kernel is wrong (or the submission never ran one) |
| 2    | unusable input: the submission (or its golden) cannot be judged, or the server refused it, or it was written for another pypto than the one that ran it (version_skew: no fault of the kernel, and a retry will not help) |
| 3    | infrastructure: our side failed (a harness exception: `not_run` at stage `harness`, with its traceback), no online worker/host can run the mode (or this host's SIM cannot simulate the kernel: sim_unsupported), or a case hit the job's memory, process or disk limit (resource_limit: raise it with the flag its reason names); nothing is known about the kernel |

A script case that exited 0 and launched no jit kernel (`not_run`, stage `no_kernel`) counts for nothing:
there was no kernel to be wrong. A run of only such cases judged nothing and exits 2 (docs/realops.md §9).
So does a test function its author marked skip (stage `skipped`, docs/realops.md §10). A test function that
needs an argument crosscheck cannot supply (stage `arguments`) is unusable input: its kernel never ran.

When cases disagree, a kernel defect wins (it is a fact about the kernel), then unusable input,
then infrastructure.

Each (verdict, stage) has one outcome and one code, in TABLE below: only a kernel defect (outcome `failed`)
exits 1; a failed golden, a card that could not be set up or our limit is `broken` (2 or 3); what this host
cannot judge (SIM limits, version skew, a reference only an NPU computes, an argument we cannot supply) is
`skipped` (2 or 3); an `inconclusive` compare is skipped too, and exits 0: it fails nothing (docs/realops.md §11).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime import verdicts

OK, KERNEL_DEFECT, UNUSABLE, INFRA = 0, 1, 2, 3
# Not an exit code: a case with no kernel to judge (a script case that exited 0 and launched none, e.g. one
# that only creates tensors). It counts for nothing; a run of only such cases judged nothing, exit 2.
NO_KERNEL = -1
# Not an exit code either: a test function marked skip by its author, not run (docs/realops.md §10).
SKIPPED = -2
IDLE = (NO_KERNEL, SKIPPED)
# What an exit code means, for the CLI's result line; a case's outcome is in words in runtime.vocabulary.
WORDS = {OK: "acceptable", KERNEL_DEFECT: "kernel defect", UNUSABLE: "unusable input", INFRA: "infrastructure"}
_PRECEDENCE = (KERNEL_DEFECT, UNUSABLE, INFRA, OK)


# The four outcomes, worst first: what a case says about the kernel (docs/dashboard.md §1), kept apart
# as JUnit (<failure>, <error>, <skipped>) and Allure keep them. The exit code follows the outcome: only a
# kernel defect exits 1.
FAILED, BROKEN, SKIPPED_OUTCOME, ACCEPTABLE = "failed", "broken", "skipped", "acceptable"
OUTCOMES = (FAILED, BROKEN, SKIPPED_OUTCOME, ACCEPTABLE)
_ANY = ""  # a row for the verdict at any stage the table does not name
# (verdict, stage) -> (outcome, code), the one table: every verdict not named here is a kernel defect.
TABLE: dict[tuple[str, str], tuple[str, int]] = {
    # cannot judge here: this host's SIM, pypto, hardware or Python cannot, or the test needs what we cannot give
    (verdicts.SIM_UNSUPPORTED, _ANY): (SKIPPED_OUTCOME, INFRA),  # runtime.judge.simgap
    (verdicts.VERSION_SKEW, _ANY): (SKIPPED_OUTCOME, UNUSABLE),  # judged on the wrong pypto (docs/versions.md)
    (verdicts.NOT_RUN, verdicts.ENVIRONMENT_STAGE): (SKIPPED_OUTCOME, INFRA),  # runtime/judge/envgap.py
    (verdicts.NOT_RUN, verdicts.NPU_ONLY_STAGE): (SKIPPED_OUTCOME, INFRA),  # a golden only an NPU can compute
    (verdicts.NOT_RUN, verdicts.ARGUMENTS_STAGE): (SKIPPED_OUTCOME, UNUSABLE),  # a fixture we cannot supply
    (verdicts.NOT_RUN, verdicts.NO_KERNEL_STAGE): (SKIPPED_OUTCOME, NO_KERNEL),  # see judged()
    (verdicts.NOT_RUN, verdicts.SKIPPED_STAGE): (SKIPPED_OUTCOME, SKIPPED),
    # a compare that cannot tell a kernel from garbage: not judged, and no failure of the run (docs/realops.md §11)
    (verdicts.INCONCLUSIVE, _ANY): (SKIPPED_OUTCOME, OK),
    # the harness or our infrastructure: the submission's golden failed, or our limit stopped the job
    (verdicts.NOT_RUN, "golden"): (BROKEN, UNUSABLE),
    (verdicts.NOT_RUN, "device"): (BROKEN, INFRA),  # the NPU card could not be set up (a faulty card, a driver)
    (verdicts.NOT_RUN, verdicts.HARNESS_STAGE): (BROKEN, INFRA),  # our own code failed (runtime.judge.outcome)
    (verdicts.RESOURCE_LIMIT, _ANY): (BROKEN, INFRA),  # nothing known about its maths: raise the limit
}


def _row(verdict: str, mode: str, stage: str) -> tuple[str, int]:
    row = TABLE.get((verdict, stage)) or TABLE.get((verdict, _ANY))
    if row:
        return row
    return (ACCEPTABLE, OK) if verdicts.acceptable(verdict, mode) else (FAILED, KERNEL_DEFECT)


def outcome(verdict: str, mode: str, stage: str = "") -> str:
    """One case's outcome (failed, broken, skipped, acceptable): the one mapping every surface uses."""
    return _row(verdict, mode, stage)[0]


def of_case(verdict: str, mode: str, stage: str = "") -> int:
    """One case's code. A case the harness could not judge is not the kernel's fault: a failed golden
    is the submission's (2), a device that could not be set up is ours (3), and so is a kernel this
    host's SIM cannot simulate (3: no capable host here, runtime.judge.simgap)."""
    return _row(verdict, mode, stage)[1]


def combine(codes: Iterable[int]) -> int:
    """The run's code from its parts' codes (none at all: nothing was judged, unusable input)."""
    seen = set(codes) - set(IDLE)
    if not seen:
        return UNUSABLE
    return next(c for c in _PRECEDENCE if c in seen)


def of_cases(cases: Iterable[Any], mode: str) -> int:
    """The code of a report's cases (runtime.report.CaseResult objects or their dicts)."""
    def get(case: Any, key: str) -> str:
        return str((case.get(key) if isinstance(case, dict) else getattr(case, key, "")) or "")

    return combine(of_case(get(c, "verdict"), mode, get(c, "stage")) for c in cases)
