"""The client side of the warm parent: start it, send it jobs, read their reports."""
from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
from importlib import util as importlib_util
from pathlib import Path
from typing import Any, Iterator

from runtime.fence.jobenv import write_sim_config
from runtime.fence.scratch import WARM_PREFIX, OwnedDir, sweep_dead
# parent_environment is the warm parent's allow-listed environment (runtime/warm/inherit.py).
from runtime.warm.inherit import parent_environment  # noqa: F401

READY_TIMEOUT_S = 180.0
# glibc makes up to 8 arenas per core, each reserving 64 MiB of address space; pypto's threads then
# map gigabytes they never touch. Two arenas keep the job's address space close to its real use.
MALLOC_ARENA_MAX = "2"
# The warm parent runs our code from where this process found it (an editable install's sources, a
# wheel's site dir, a checkout), never from the starting dir: -P keeps that off its sys.path, so
# nothing there shadows an import (docs/SECURITY.md, "The job's view of the host").
CODE_ROOT = Path(__file__).resolve().parents[2]
BOOT = ("import runpy, sys; sys.path.insert(0, sys.argv[1]); module = sys.argv[2]; del sys.argv[1:3]; "
        "runpy.run_module(module, run_name='__main__', alter_sys=True)")


class WarmParentError(RuntimeError):
    """The warm parent could not start or stopped answering (our infrastructure, not the kernel)."""


def _pypto_lib_dir() -> Path:
    spec = importlib_util.find_spec("pypto")
    if spec is None or not spec.submodule_search_locations:
        raise WarmParentError("pypto is not installed in this Python")
    return Path(list(spec.submodule_search_locations)[0]) / "lib"


class WarmParent:
    """Client side: start the warm parent and send it jobs, one at a time."""

    # Whether a script may run through it (runtime/runner.py): a parent whose simulator config is the
    # silenced one for every run (the run daemon's) sends scripts to a private stock one.
    runs_scripts = True

    parent_module = "runtime.warm.parent"  # run as a module: a fresh exec, never a fork of the caller

    def __init__(self, mode: str = "sim", scratch: Path | None = None, stock_simulator: bool = False):
        self.mode = mode
        # pypto reads its simulator config once, at import: stock keeps the drawing scripts and the files they
        # write (merged_swimlane.json) that scripts read as in a plain run (docs/realops.md §9).
        self.stock_simulator = stock_simulator
        self._owned = None if scratch else OwnedDir(WARM_PREFIX)  # swept if we die (runtime/fence/scratch.py)
        self.scratch = self._owned.path if self._owned else Path(scratch or ".")
        self.scratch.chmod(0o755)
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self._reader: Any = None
        self._next_id = 0
        self._send_lock = threading.Lock()  # cancel() comes from another thread (the worker's heartbeat)
        self.cancelled = False  # set by cancel(): no further job is sent until the owner clears it
        self.info: dict[str, Any] = {}

    @property
    def config_path(self) -> Path:
        return self.scratch / "tile_fwk_config.json"

    @property
    def log_dir(self) -> Path:
        return self.scratch / "logs"

    def start(self) -> dict[str, Any]:
        if self.proc is not None:
            return self.info
        sweep_dead()  # job and warm dirs of predecessors that were killed: nobody else removes them
        if self.stock_simulator:
            shutil.copyfile(_pypto_lib_dir() / "configs" / "tile_fwk_config.json", self.config_path)
            self.config_path.chmod(0o644)
        else:
            write_sim_config(_pypto_lib_dir(), self.config_path)
        for sub in ("home", "logs", "output"):
            (self.scratch / sub).mkdir(exist_ok=True)
        ours, theirs = socket.socketpair()
        env = self.environment()
        log = open(self.scratch / "warm-parent.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-c", BOOT, str(CODE_ROOT), self.parent_module, str(theirs.fileno()), self.mode,
             str(self.scratch)],
            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )
        theirs.close()
        log.close()
        self.sock = ours
        self._reader = ours.makefile("rb")
        ready, _, _ = select.select([ours], [], [], READY_TIMEOUT_S)
        if not ready:
            self.close()
            raise WarmParentError(f"warm parent did not start within {READY_TIMEOUT_S:.0f} s")
        self.info = self._receive()
        if not self.info.get("ready"):
            detail = self.info.get("error", "no answer")
            self.close()
            raise WarmParentError(f"warm parent failed to start: {detail}")
        return self.info

    def environment(self) -> dict[str, str]:
        """The warm parent's whole environment, built from an allow-list (docs/SECURITY.md, Sandbox).

        Every job is a fork of the warm parent, so whatever its exec received (the environment
        strings on its first stack page) is readable in every job's memory, even after
        os.environ.clear(). The worker's WORKER_TOKEN, API_URL or DATA_DIR must never get there.
        """
        env = parent_environment(self.mode)
        env.update({
            "HOME": str(self.scratch / "home"),
            "PYPTO_HOME": str(self.scratch / "home" / ".pypto"),
            "ASCEND_PROCESS_LOG_PATH": str(self.log_dir),
            "TILE_FWK_OUTPUT_DIR": str(self.scratch / "output"),
            "TILEFWK_CONFIG_PATH": str(self.config_path),
            "OMP_NUM_THREADS": "1",  # forks of a multi-threaded torch hang (docs/pypto.md §2)
            "MALLOC_ARENA_MAX": MALLOC_ARENA_MAX,
        })
        return env

    def _receive(self) -> dict[str, Any]:
        line = self._reader.readline()
        if not line:
            tail = ""
            try:
                tail = (self.scratch / "warm-parent.log").read_text(errors="replace")[-2000:]
            except OSError:
                pass
            raise WarmParentError(f"warm parent exited unexpectedly. Log tail:\n{tail}")
        return json.loads(line)

    def run_job(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one job; returns the leader's report (events, exit status, timings)."""
        for _index, report in self.run_jobs([request], parallel=1):
            return report
        return {"cancelled": True}  # cancelled before it was sent

    def run_jobs(self, requests: list[dict[str, Any]], parallel: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """Run jobs with up to `parallel` at once; yields (index, report) as each finishes.

        Stop iterating early (break) to send no further jobs; the ones in flight are awaited on
        the next call, never mixed up (replies carry their request's id).
        """
        self.start()
        assert self.sock is not None
        pending = list(enumerate(requests))
        in_flight: dict[int, int] = {}
        try:
            while (pending and not self.cancelled) or in_flight:
                while pending and not self.cancelled and len(in_flight) < max(1, parallel):
                    index, request = pending.pop(0)
                    self._next_id += 1
                    in_flight[self._next_id] = index
                    body = {**request, "id": self._next_id, "warm_log_dir": str(self.log_dir)}
                    self._send(json.dumps(body).encode() + b"\n")
                reply = self._receive()
                index = in_flight.pop(reply.pop("id"))
                yield index, reply
        except BaseException as exc:
            if in_flight and not isinstance(exc, GeneratorExit):
                self.cancel()  # interrupted (SIGTERM, Ctrl-C, an error): stop what runs, do not wait it out
            raise
        finally:
            while in_flight:  # a caller that stopped early: drain what is still running
                in_flight.pop(self._receive().pop("id"), None)

    def cancel(self) -> None:
        """Stop every job running now: each ends at once with `cancelled` in its report, and no further
        job is sent until `cancelled` is cleared. Thread-safe."""
        self.cancelled = True
        try:
            self._send(b'{"op": "cancel"}\n')
        except OSError:
            pass

    def _send(self, data: bytes) -> None:
        sock = self.sock
        if sock is None:
            return
        with self._send_lock:
            sock.sendall(data)

    def close(self) -> None:
        if self.sock is not None:
            try:
                self._send(b'{"op": "quit"}\n')
            except OSError:
                pass
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self._owned is not None:
            self._owned.cleanup()

    def __enter__(self) -> "WarmParent":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
