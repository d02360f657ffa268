"""What this worker can do (modes, devices, versions, graph verify) and the calculator's background build."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from runtime import calculator
from runtime.errors import NO_NPU_MESSAGE
from runtime.host import environment, npu_devices, npu_status

log = logging.getLogger(__name__)

READY = "ready"
STOP_GRACE_S = 10.0


class NoNpuHost(SystemExit):
    """An NPU worker was asked to start on a host without an NPU (exits the worker with the message)."""


def host_modes() -> list[str]:
    available, _ = npu_status()
    return ["sim", "npu"] if available else ["sim"]


def check_queues(queues: list[str]) -> None:
    """Refuse to consume the npu queue on a host without an NPU, with the runtime's message."""
    if "npu" not in queues:
        return
    available, why = npu_status()
    if not available:
        raise NoNpuHost(f"refusing to consume the npu queue: {NO_NPU_MESSAGE} ({why})")


def device_id() -> int | None:
    """The NPU device jobs use: TILE_FWK_DEVICE_ID (the ecosystem's convention), else the first one."""
    env = os.environ.get("TILE_FWK_DEVICE_ID")
    if env is not None and env.strip().isdigit():
        return int(env)
    devices = npu_devices()
    return devices[0] if devices else None


def capabilities(graph_verify: str) -> dict[str, Any]:
    env = environment()
    return {
        "modes": host_modes(),
        "devices": npu_devices(),
        "versions": {"pypto": env.pypto, "torch": env.torch, "python": env.python, "cann": env.cann,
                     "runtime": env.runtime},
        "graph_verify": graph_verify,
    }


class CalculatorBuild:
    """Builds the graph-verify calculator in a separate process (about 60 s and 1.4 GB) while jobs run.

    Until it is ready, SIM jobs run without graph verify (their cases say why), so a fresh worker
    is useful at once. Concurrent builders (several workers on one cache) wait for one another
    inside runtime.calculator.build.
    """

    def __init__(self, cache_dir: Path):
        self.cache_dir = Path(cache_dir)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.cache_dir / "calculator-build.log"

    def ensure(self) -> str:
        """Start the build unless the calculator is ready; returns the state."""
        ready, _ = calculator.status(self.cache_dir)
        if ready or self.proc is not None:
            return self.state()
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
