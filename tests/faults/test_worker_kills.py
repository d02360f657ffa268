"""SIGKILLs of workers mid-job (whole process trees, four workers at a time): no result lost, none duplicated.

Eight kills in the suite (two rounds: a round of four, then a round started while the first round's jobs are
still re-queued); `CROSSCHECK_FAULT_KILLS=20` gives the longer run (docs/SECURITY.md)."""
from __future__ import annotations

import os
import socket

import pytest

from tests.e2e.conftest import FINISHED, Stack
from tests.faults.conftest import results_of, submit_sleeper

pytestmark = pytest.mark.slow
KILLS = int(os.environ.get("CROSSCHECK_FAULT_KILLS", "8"))
AT_ONCE = 4  # workers started, and killed mid-job, per round
JOBS = AT_ONCE


def _start_many(stack: Stack, names: list[str]) -> list:
    """Spawn several `crosscheck worker`s at once (their start-up overlaps), then wait for each heartbeat."""
    import sys

    procs = []
    for name in names:
        proc = stack._spawn([sys.executable, "-m", "server.cli", "worker", "--queue", "sim", "--name", name],
                            f"worker-{name}.log")
        stack.workers.append(proc)
        procs.append(proc)
    host = socket.gethostname()
    for name, proc in zip(names, procs, strict=True):
        def posted(name: str = name) -> bool:
            return any(w["name"] == f"{name}@{host}" and w["online"] for w in stack.get("/workers")["items"])
        stack.wait(posted, 180, f"worker {name}'s heartbeat", stack.logs / f"worker-{name}.log")
    return procs


def test_sigkills_of_workers_mid_job_lose_and_duplicate_nothing(fault_stack: Stack) -> None:
    jobs = [submit_sleeper(fault_stack, seconds=20)["jobs"][0]["id"] for _ in range(JOBS)]
    kills, rounds = 0, 0
    while kills < KILLS:
        names = [f"victim{rounds}-{i}" for i in range(min(AT_ONCE, KILLS - kills))]
        procs = _start_many(fault_stack, names)
        rounds += 1

        def busy() -> set[str]:
            states = [fault_stack.get(f"/jobs/{j}") for j in jobs]
            return {(s["worker"] or "").split("@")[0] for s in states if s["status"] == "running"}

        fault_stack.wait(lambda: set(names) <= busy(), 240, f"a job running on each of {names}")
        for proc in procs:
            fault_stack.kill_worker(proc)
            kills += 1
    fault_stack.start_worker("survivor")
    finished = [fault_stack.wait_job(j, FINISHED, deadline_s=600) for j in jobs]
    lost = [j["id"] for j in finished if j["status"] not in ("succeeded", "failed") or not j["case_count"]]
    rows = {j["id"]: results_of(fault_stack, j["id"]) for j in finished}
    duplicated = [j for j, r in rows.items() if len(r) != len({c["case"] for c in r})]
    print(f"faults: {kills} worker SIGKILLs mid-job in {rounds} rounds over {JOBS} jobs; attempts "
          f"{[j['attempts'] for j in finished]}; lost {len(lost)}, duplicated {len(duplicated)}")
    assert kills == KILLS and not lost and not duplicated, (finished, rows)
    assert sum(j["attempts"] for j in finished) >= JOBS + KILLS  # each kill cost its job an attempt
    assert all(len(rows[j["id"]]) == j["case_count"] for j in finished)
