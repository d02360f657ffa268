"""docs/platform.md §1: is a task redelivered after its worker is SIGKILLed mid-task (acks_late)?

Usage: python docs/repro/broker_redelivery.py [BROKER_URL] [WAIT_S]
  default broker: the embedded SQLite transport in a temp dir; for Redis give a db nobody else uses,
  e.g. redis://127.0.0.1:6379/13 (the killed task stays there unacked).
A throwaway Celery app (not ours) runs one 60 s task in a solo worker; the worker is killed once the task
has started, a second worker starts, and the script counts how often the task started within WAIT_S.
"""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

APP = '''
import time
from celery import Celery
from kombu.transport import sqlalchemy as sqla

sqla.Transport.polling_interval = 0.1  # on the class: kombu hands transport options to create_engine
app = Celery("redelivery", broker={broker!r})
app.conf.update(task_acks_late=True, worker_prefetch_multiplier=1, broker_connection_retry_on_startup=True)
if {broker!r}.startswith("redis"):  # the SQLite transport would pass these to create_engine too
    app.conf.broker_transport_options = {{"visibility_timeout": 5, "unacked_restore_interval": 2,
                                         "unacked_restore_throttle": 1}}

@app.task(name="slow")
def slow(log):
    with open(log, "a") as f:
        f.write("started\\n")
    time.sleep(60)
'''


def worker(tmp: Path) -> subprocess.Popen:  # type: ignore[type-arg]
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "redelivery_app", "worker", "--pool=solo",
                             "--loglevel=WARNING", "--without-heartbeat", "--without-gossip", "--without-mingle"],
                            cwd=tmp, env={**os.environ, "PYTHONPATH": str(tmp)}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "worker.log", "a"))


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="redelivery-"))
    broker = sys.argv[1] if len(sys.argv) > 1 else f"sqla+sqlite:///{tmp}/broker.db"
    wait_s = float(sys.argv[2]) if len(sys.argv) > 2 else 40
    (tmp / "redelivery_app.py").write_text(textwrap.dedent(APP.format(broker=broker)))
    log = tmp / "starts.log"
    workers = [worker(tmp)]
    try:
        send = "import redelivery_app as m; m.slow.delay(%r)" % str(log)
        subprocess.run([sys.executable, "-c", send], cwd=tmp, env={**os.environ, "PYTHONPATH": str(tmp)},
                       check=True)
        deadline = time.monotonic() + 60
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not log.exists():
            sys.exit(f"the task never started; see {tmp / 'worker.log'}")
        os.killpg(workers[0].pid, signal.SIGKILL)
        workers[0].wait()
        killed_at = time.monotonic()
        workers.append(worker(tmp))
        starts = 1
        while time.monotonic() - killed_at < wait_s:
            starts = log.read_text().count("started")
            if starts > 1:
                break
            time.sleep(0.5)
    finally:
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait()
    scheme = broker.split(":", 1)[0]
    if starts > 1:
        print(f"{scheme}: redelivered, started again {time.monotonic() - killed_at:.0f} s after the kill")
    else:
        print(f"{scheme}: not redelivered within {wait_s:.0f} s of the kill (started {starts} time)")


if __name__ == "__main__":
    main()
