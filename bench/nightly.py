"""Reuse of unchanged results (issue 10): the second run of an unchanged suite must cost <= 1/20 of the first.

Starts `crosscheck up` (API, dashboard and one real SIM worker on SQLite and the embedded broker) in a
temp data dir, copies example operators into a checkout, and times `crosscheck ci run` on it twice,
side by side: the first run compiles and simulates every case; the second finds nothing changed and
links the first run's results. Wall time of the whole client command, from start to exit.

    python bench/nightly.py                      # 9 operators, 19 cases
    python bench/nightly.py --ops scale_add relu # a quick look
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2 as httpx

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
OPS = ("scale_add", "relu", "gelu", "sigmoid", "softmax", "rmsnorm", "matmul", "attention", "dynamic_add")
TARGET_RATIO = 1 / 20
START_DEADLINE_S = 300.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(data: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith("CROSSCHECK_") and k not in ("DATABASE_URL", "BROKER_URL", "DATA_DIR", "BLOB_DIR")}
    return {**keep, "PYTHONPATH": str(REPO), "DATA_DIR": str(data), "COLUMNS": "100"}


def start(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = open(data.parent / "up.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "up", "--port", str(port), "--data-dir", str(data)],
                            env=env_for(data), cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_DEADLINE_S
    token = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"crosscheck up exited: {(data.parent / 'up.log').read_text()[-2000:]}")
        try:
            if token is None and (data / "tokens.json").exists():
                token = json.loads((data / "tokens.json").read_text())["admin"]
            if token:
                workers = httpx.get(url + "/api/v1/workers", headers={"Authorization": f"Bearer {token}"},
                                    timeout=5).json()["items"]
                if any(w["online"] for w in workers):
                    return proc, url
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(1)
    raise SystemExit("crosscheck up did not get a worker online in time")


def stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: up stops its API and worker
        proc.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def ci_run(url: str, data: Path, checkout: Path, key: str) -> tuple[float, str]:
    # As in a pipeline, the token comes from the environment (a CI secret).
    env = {**env_for(data), "CROSSCHECK_TOKEN": json.loads((data / "tokens.json").read_text())["admin"]}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "server.cli", "ci", "run", str(checkout), "--server", url,
                           "--suite", "bench-nightly", "--run-key", key, "--label", "branch=main",
                           "--fail-on", "never"], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=3600, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ci run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", nargs="+", default=list(OPS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-nightly-") as tmp:
        root = Path(tmp)
        checkout = root / "checkout"
        for op in args.ops:
            shutil.copytree(EXAMPLES / op, checkout / "ops" / op)
        data = root / "crosscheck-data"
        proc, url = start(data)
        try:
            first, first_out = ci_run(url, data, checkout, "first")
            second, second_out = ci_run(url, data, checkout, "second")
        finally:
            stop(proc)
    summary = [line for line in second_out.splitlines() if line.startswith("Suite run")]
    print(f"| run | operators | seconds | vs first |\n|---|---|---|---|")
    print(f"| first (every case compiled and simulated) | {len(args.ops)} | {first:.1f} | 1 |")
    print(f"| second, unchanged (reused) | {len(args.ops)} | {second:.1f} | {second / first:.3f} (1/{first / second:.0f}) |")
    print(f"\nfirst:  {next((l for l in first_out.splitlines() if l.startswith('Suite run')), '')}")
    print(f"second: {summary[0] if summary else ''}")
    print(f"target <= 1/20 = {TARGET_RATIO:.3f}: {'met' if second / first <= TARGET_RATIO else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
