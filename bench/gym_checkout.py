"""Every operator of examples/gym-checkout, as `crosscheck run CHECKOUT --op NAME` runs it (issue 9).

    python bench/gym_checkout.py [CHECKOUT]

Prints one markdown row per operator: the route discovery chose, the cases found, the verdicts, the
graph_verify statuses, and the seconds of the run (wall clock of run_submission, one warm parent for all,
graph verify on, default limits).
"""
from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.evidence.calculator import default_cache_dir  # noqa: E402
from runtime.intake.discover import discover  # noqa: E402
from runtime.intake.submission import load_operator as load  # noqa: E402
from runtime.runner import RunOptions, run_submission  # noqa: E402
from runtime.warm import WarmParent  # noqa: E402


def counted(values: list[str]) -> str:
    return ", ".join(f"{v} ×{n}" if n > 1 else v for v, n in Counter(values).items())


def main() -> None:
    checkout = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "examples" / "gym-checkout"
    print("| operator | route | cases found | verdicts | graph verify | seconds |")
    print("|---|---|---|---|---|---|")
    warm = WarmParent("sim")
    try:
        for op in discover(checkout):
            if op.route == "none":
                print(f"| {op.name} | none | 0 | {op.problem} | | |")
                continue
            options = RunOptions(cache_dir=default_cache_dir(), work_dir=Path(tempfile.mkdtemp(prefix="gymbench-")))
            start = time.perf_counter()
            report = run_submission(checkout, options, warm=warm, loaded=load(checkout, op))
            seconds = time.perf_counter() - start
            graph = [str((c.graph_verify or {}).get("status")) for c in report.cases]
            print(f"| {op.name} | {op.route} | {len(report.cases)} | {counted([c.verdict for c in report.cases])} "
                  f"| {counted(graph)} | {seconds:.1f} |", flush=True)
    finally:
        warm.close()


if __name__ == "__main__":
    main()
