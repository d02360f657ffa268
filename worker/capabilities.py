"""What this worker can do (modes, devices, versions, graph verify) and the calculator's background build."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from jobqueue import parse_queue
from runtime.evidence import calculator, graph_verify
from runtime.modes import MODES
from runtime.errors import NO_NPU_MESSAGE
from runtime.devices.host import environment, npu_devices, npu_status
from runtime.devices.npu_probe import NpuHost, probe
from worker.card_health import CardLedger
from worker.card_pool import CardPool

log = logging.getLogger(__name__)

READY = "ready"
STOP_GRACE_S = 10.0


class NoNpuHost(SystemExit):
    """An NPU worker was asked to start on a host without a usable NPU (exits the worker with the message)."""


class WrongPypto(SystemExit):
    """A worker was asked to consume the queue of a pypto version it does not have."""


def check_versions(queues: list[str]) -> None:
    """Refuse `sim@X` unless this host's pypto is X (docs/versions.md §3)."""
    installed = environment().pypto
    for queue in queues:
        _, version = parse_queue(queue)
        if version is not None and version != installed:
            raise WrongPypto(f"refusing to consume {queue}: this worker has pypto {installed}, not {version}")


def host_modes(npu: NpuHost | None = None) -> list[str]:
    """sim always; npu when the start-up probe found usable cards (or, without a probe, the quick check)."""
    if npu is not None:
        return list(MODES) if npu.usable else ["sim"]
    available, _ = npu_status()
    return list(MODES) if available else ["sim"]


def check_queues(queues: list[str], npu: NpuHost | None = None) -> None:
    """Refuse to consume the npu queue on a host without a usable NPU, naming what is missing."""
    if "npu" not in queues:
        return
    if npu is None:
        available, why = npu_status()
        if not available:
            raise NoNpuHost(f"refusing to consume the npu queue: {NO_NPU_MESSAGE} ({why})")
        return
    if not npu.usable:
        raise NoNpuHost(f"refusing to consume the npu queue: {NO_NPU_MESSAGE} ({npu.problem})")


def probe_npu(queues: list[str], allowed: list[int] | None) -> NpuHost | None:
    """The start-up probe (runtime.devices.npu_probe), for workers that consume the npu queue.

    TASK_DEVICE, set by npu-taskqueue for the process it starts, narrows the cards to that one.
    """
    if "npu" not in queues:
        return None
    task_device = os.environ.get("TASK_DEVICE", "").strip()
    if task_device.isdigit():
        allowed = [int(task_device)] if allowed is None or int(task_device) in allowed else []
    return probe(allowed)


def card_rows(npu: NpuHost, pool: CardPool, ledger: CardLedger) -> list[dict[str, Any]]:
    """One row per usable card for the Workers page: npu-smi's view, the ledger, the job on it."""
    health = ledger.snapshot()
    busy = pool.busy()
    smi = {c["device"]: c for c in npu.cards}
    rows = []
    for card in pool.devices:
        row = health.get(card, {})
        info = smi.get(card, {})
        rows.append({
            "device": card, "soc": info.get("name"), "npu_smi_health": info.get("health"),
            "state": "quarantined" if row.get("quarantined") else ("busy" if card in busy else "free"),
            "job_id": busy.get(card), "failures_in_row": row.get("failures_in_row", 0),
            "failures": row.get("failures", 0), "jobs_ok": row.get("jobs_ok", 0),
            "quarantined_at": row.get("quarantined_at"), "reason": row.get("reason"),
            "last_failure": row.get("last_failure"),
        })
    return rows


def capabilities(graph_verify: str, npu: NpuHost | None = None, pool: CardPool | None = None,
                 ledger: CardLedger | None = None) -> dict[str, Any]:
    env = environment()
    caps: dict[str, Any] = {
        "modes": host_modes(npu),
        "devices": npu_devices() if npu is None else list(npu.usable),
        "versions": {"pypto": env.pypto, "torch": env.torch, "python": env.python, "cann": env.cann,
                     "runtime": env.runtime},
        "graph_verify": graph_verify,
    }
    if npu is not None:
        quarantined = ledger.quarantined() if ledger is not None else set()
        usable = [d for d in npu.usable if d not in quarantined]
        caps["modes"] = list(MODES) if usable else ["sim"]  # every card quarantined: not an NPU worker now
        caps["versions"].update(torch_npu=npu.torch_npu, driver=npu.driver)
        caps["npu"] = {"usable": usable, "quarantined": sorted(quarantined), "problem": npu.problem,
                       "device_count": npu.device_count, "test_double": npu.test_double}
        if pool is not None and ledger is not None:
            caps["cards"] = card_rows(npu, pool, ledger)
    return caps


class CalculatorBuild:
    """Builds the graph-verify calculator in a separate process (about 60 s and 1.4 GB) while jobs run.

    Until it is ready, SIM jobs run without graph verify (their cases say why), so a fresh worker
    is useful at once. Concurrent builders (several workers on one cache) wait for one another
    inside runtime.evidence.calculator.build.
    """

    def __init__(self, cache_dir: Path):
        self.cache_dir = Path(cache_dir)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.cache_dir / "calculator-build.log"

    def ensure(self) -> str:
        """Start the build unless the calculator is ready; returns the state."""
        ready, _ = calculator.status(self.cache_dir)
        if ready or self.proc is not None or graph_verify.version_problem(environment().pypto):
            return self.state()  # an unsupported pypto runs without graph verify (docs/versions.md §2)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            # A session of its own, so stop() can interrupt cmake and make with it.
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "runtime", "calculator", "build", "--cache-dir", str(self.cache_dir)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        log.info("calculator.build_started pid=%s cache_dir=%s", self.proc.pid, self.cache_dir)
        return self.state()

    def state(self) -> str:
        """"ready", or why graph verify is unavailable."""
        ready, note = calculator.status(self.cache_dir)
        if ready:
            return READY
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                return "the graph-verify calculator is being built (about a minute)"
            return f"the graph-verify calculator build failed (exit code {code}); see {self.log_path}"
        return note

    def stop(self) -> None:
        """Interrupt a running build (SIGINT lets it remove its marker), then kill what is left."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the build's session
        except ProcessLookupError:
            pass
        log.info("calculator.build_stopped pid=%s", proc.pid)
