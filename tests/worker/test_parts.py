"""The worker's parts and the local commands, each with real processes and files."""
from __future__ import annotations

import argparse
import io
import os
import signal
import socket
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from jobqueue import worker_queues
from runtime.devices.pypto_api import installed_version
from client import submit
from server.commands import datadir
from server.commands.worker import celery_command
from worker.config import WorkerSettings
from tests.conftest import EXAMPLES, REPO
from worker import capabilities
from worker.client import backoff_s
from worker.warm import WarmHolder


@pytest.mark.slow
def test_warm_holder_reuses_and_restarts_its_warm_parent() -> None:
    holder = WarmHolder("sim")
    try:
        first = holder.get()
        assert holder.get() is first and holder.starts == 1
        pid = holder.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        first.proc.wait()  # type: ignore[union-attr]
        second = holder.get()
        assert second is not first and holder.pid != pid and holder.starts == 2
    finally:
        holder.close()
    assert holder.pid is None


def test_capabilities_of_a_cpu_host() -> None:
    caps = capabilities.capabilities("ready")
    assert caps["modes"] == ["sim"] and caps["devices"] == []
    assert set(caps["versions"]) == {"pypto", "torch", "python", "cann", "runtime"}
    assert caps["versions"]["runtime"].startswith("0.") and "+" in caps["versions"]["runtime"]  # release+digest
    assert caps["graph_verify"] == "ready"


def test_npu_queue_is_refused_on_a_cpu_host_with_the_runtime_message() -> None:
    capabilities.check_queues(["sim"])
    with pytest.raises(capabilities.NoNpuHost, match=r"no NPU on this host: torch_npu/CANN not found \("):
        capabilities.check_queues(["sim", "npu"])


def test_crosscheck_worker_refuses_the_npu_queue() -> None:
    done = subprocess.run([sys.executable, "-m", "server.cli", "worker", "--queue", "npu"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "no NPU on this host: torch_npu/CANN not found" in done.stderr


def test_calculator_state_without_a_build(tmp_path: Path) -> None:
    build = capabilities.CalculatorBuild(tmp_path)
    assert "not built yet" in build.state()
    build.stop()  # nothing started: nothing to stop


def test_celery_app_reliability_settings() -> None:
    from kombu.transport import sqlalchemy as sqla

    from worker.app import REDIS_VISIBILITY_TIMEOUT_S, create_app

    app = create_app(WorkerSettings(broker_url="redis://127.0.0.1:6379/15"))
    conf = app.conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost and conf.worker_prefetch_multiplier == 1
    assert conf.task_ignore_result
    assert conf.broker_transport_options["visibility_timeout"] == REDIS_VISIBILITY_TIMEOUT_S
    assert conf.broker_transport_options["unacked_restore_interval"] * \
        conf.broker_transport_options["unacked_restore_throttle"] <= 10
    names = [q.name for q in conf.task_queues]
    assert not [n for n in names if n.startswith("npu")]  # never npu on a CPU host
    assert names == worker_queues(["sim"], installed_version())  # its own pypto's queues (docs/versions.md §3)
    app.close()

    app = create_app(WorkerSettings(broker_url="sqla+sqlite:////tmp/x/broker.db", broker_poll_s=0.05))
    assert app.conf.broker_transport_options == {}  # polling_interval here would crash the worker
    assert sqla.Transport.polling_interval == 0.05
    app.close()


def test_backoff_grows_and_is_capped() -> None:
    assert [backoff_s(i) for i in range(7)] == [1, 2, 4, 8, 16, 30, 30]


def test_celery_command_line() -> None:
    cmd = celery_command(["sim"], 2, "box")
    assert cmd[:5] == [sys.executable, "-m", "celery", "-A", "worker.app"]
    assert cmd[cmd.index("-Q") + 1] == "sim" and cmd[cmd.index("--hostname") + 1] == "box@%h"
    assert "--without-mingle" in cmd


def test_folder_zip_is_deterministic(tmp_path: Path) -> None:
    copy = tmp_path / "scale_add"
    copy.mkdir()
    for f in sorted((EXAMPLES / "scale_add").glob("*.*")):
        (copy / f.name).write_bytes(f.read_bytes())
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.pyc").write_bytes(b"junk")
    name, data = submit.bundle(copy)
    assert name == "scale_add.zip"
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert names == sorted(names) and "test_cases.json" in names and "__pycache__/x.pyc" not in names
    os.utime(copy / "test_cases.json", (1, 1))  # times do not change the bytes (nor the sha256)
    assert submit.zip_folder(copy) == data


def test_bad_upload_suffix_is_unusable(tmp_path: Path) -> None:
    (tmp_path / "k.txt").write_text("x")
    with pytest.raises(submit.Unusable, match="upload an operator package"):
        submit.bundle(tmp_path / "k.txt")
    with pytest.raises(submit.Unusable, match="no such file"):
        submit.bundle(tmp_path / "missing")


def test_tokens_file_is_private_and_read_back(tmp_path: Path) -> None:
    path = datadir.write_tokens(tmp_path, {"admin": "a", "worker": "w"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert datadir.read_tokens(tmp_path) == {"admin": "a", "worker": "w"}
    path.write_text("not json")
    assert datadir.read_tokens(tmp_path) == {}


def test_up_reuses_valid_tokens_and_replaces_revoked_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from server import db, migrate
    from server.commands import up
    from server.config import get_settings
    from server.services import tokens

    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings = up._configure(tmp_path)
    try:
        migrate.upgrade(settings.resolved_database_url)
        first = up.ensure_tokens(tmp_path)
        assert up.ensure_tokens(tmp_path) == first
        with db.session_scope() as session:
            revoked = tokens.verify(session, first["worker"])
            assert revoked is not None
            tokens.revoke(session, revoked.id)
        second = up.ensure_tokens(tmp_path)
        assert second["admin"] == first["admin"] and second["worker"] != first["worker"]
        assert datadir.read_tokens(tmp_path) == second
    finally:
        monkeypatch.delenv("DATA_DIR", raising=False)
        get_settings.cache_clear()
        db.reset_caches()


def test_worker_settings_need_only_the_broker_and_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """README: an NPU worker needs BROKER_URL, API_URL and WORKER_TOKEN; nothing of the server's."""
    from worker.config import WorkerSettings

    monkeypatch.setenv("BROKER_URL", "redis://broker.example:6379/0")
    monkeypatch.setenv("API_URL", "http://api.example:8000")
    monkeypatch.setenv("WORKER_TOKEN", "t0k3n")
    monkeypatch.setenv("DATABASE_URL", "postgresql://not-for-workers/db")
    settings = WorkerSettings()
    assert (settings.resolved_broker_url, settings.api_url, settings.worker_token) == \
        ("redis://broker.example:6379/0", "http://api.example:8000", "t0k3n")
    assert not hasattr(settings, "database_url")
    monkeypatch.setenv("NPU_DEVICES", "0-x")
    with pytest.raises(ValueError, match="NPU_DEVICES|npu_devices|0-x"):
        WorkerSettings()


def test_every_job_is_told_to_hide_the_service_data(tmp_path: Path) -> None:
    from worker.lifecycle import service_paths

    settings = WorkerSettings(data_dir=tmp_path / "data", npu_state_dir=tmp_path / "cards",
                              hide_from_jobs=f"{tmp_path / 'bundles'}{os.pathsep}{tmp_path / 'logs'}")
    assert service_paths(settings) == [tmp_path / "data", tmp_path / "cards", tmp_path / "bundles", tmp_path / "logs"]


def test_up_on_a_taken_port_refuses_before_it_starts_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 35's walk: `up` on a taken port said "up at" the other server, then its worker's heartbeats got 401s
    there and it stopped 20 s later with code 1."""
    from server.commands import up

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = argparse.Namespace(port=port, host="127.0.0.1", data_dir=tmp_path / "D", concurrency=1, verbose=False)
        assert up.run(args) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use" in err and "--port" in err
    assert not (tmp_path / "D").exists()  # no data dir, database or tokens made for a start that cannot happen
