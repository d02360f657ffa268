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
# The class words: runtime.vocabulary re-exports them, so the CLI, JUnit and the pages say the same words.
WORDS = {OK: "acceptable", KERNEL_DEFECT: "kernel defect", UNUSABLE: "unusable input", INFRA: "infrastructure"}
_PRECEDENCE = (KERNEL_DEFECT, UNUSABLE, INFRA, OK)


def of_case(verdict: str, mode: str, stage: str = "") -> int:
    """One case's code. A case the harness could not judge is not the kernel's fault: a failed golden
    is the submission's (2), a device that could not be set up is ours (3), and so is a kernel this
    host's SIM cannot simulate (3: no capable host here, runtime.judge.simgap)."""
    if verdicts.acceptable(verdict, mode):
        return OK
    if verdict == verdicts.SIM_UNSUPPORTED:
        return INFRA
    if verdict == verdicts.NOT_RUN and stage == "golden":
        return UNUSABLE
    if verdict == verdicts.VERSION_SKEW:  # judged on the wrong pypto: nothing known about the kernel (docs/versions.md)
        return UNUSABLE
    if verdict == verdicts.NOT_RUN and stage == "device":
        return INFRA
    if verdict == verdicts.NOT_RUN and stage == verdicts.HARNESS_STAGE:
        return INFRA  # our own code failed: nothing is known about the kernel (runtime.judge.outcome)
    if verdict == verdicts.NOT_RUN and stage == verdicts.ENVIRONMENT_STAGE:
        return INFRA  # this host's Python lacks a package the submission imports (runtime/judge/envgap.py)
    if verdict == verdicts.NOT_RUN and stage == verdicts.NO_KERNEL_STAGE:
        return NO_KERNEL  # a script case that ran cleanly and launched no kernel: see judged()
    if verdict == verdicts.NOT_RUN and stage == verdicts.SKIPPED_STAGE:
        return SKIPPED
    if verdict == verdicts.NOT_RUN and stage == verdicts.ARGUMENTS_STAGE:
        return UNUSABLE
    if verdict == verdicts.RESOURCE_LIMIT:  # our limit stopped it: nothing known about its maths
        return INFRA
    return KERNEL_DEFECT


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


def summary(cases: Iterable[Any], mode: str) -> str:
    """One line saying what happened, e.g. 'kernel defect: 2 of 2 cases (graph fail ×2)'."""
    rows = [c if isinstance(c, dict) else {"verdict": c.verdict, "stage": c.stage} for c in cases]
    code = combine(of_case(str(r["verdict"]), mode, str(r.get("stage") or "")) for r in rows)
    if not rows:
        return "unusable input: no case was judged"
    codes = [of_case(str(r["verdict"]), mode, str(r.get("stage") or "")) for r in rows]
    skipped = codes.count(SKIPPED)
    marked = f"; {skipped} marked skip by the test (not run)" if skipped else ""
    if all(c in IDLE for c in codes):
        if not skipped:
            return f"unusable input: none of the {len(rows)} case(s) launched a kernel (not run ×{len(rows)})"
        return f"unusable input: none of the {len(rows)} case(s) was judged ({skipped} marked skip by the test)"
    bad = [r for r, c in zip(rows, codes) if c == code]
    counts: dict[str, int] = {}
    for r in bad:
        counts[str(r["verdict"])] = counts.get(str(r["verdict"]), 0) + 1
    what = ", ".join(f"{v.replace('_', ' ')} ×{n}" for v, n in counts.items())
    if code == OK:
        idle = codes.count(NO_KERNEL)
        if idle:
            return (f"acceptable: {len(bad)} of {len(rows)} case(s) ({what}); {idle} launched no kernel "
                    f"(not run ×{idle}: nothing to judge){marked}")
        if skipped:
            return f"acceptable: {len(bad)} of {len(rows)} case(s) ({what}){marked}"
        return f"acceptable: all {len(rows)} case(s) ({what})"
    return f"{WORDS[code]}: {len(bad)} of {len(rows)} case(s) ({what}){marked}"
