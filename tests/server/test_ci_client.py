"""`crosscheck ci run` and `crosscheck upload` as a pipeline runs them: real processes against a live server.

Jobs are answered by a responder thread that claims them through the worker API and posts the
recorded scale_add report (the same path tests/server/conftest.py's Seeder takes); the slow test
at the end runs them with the real worker job function and the real runtime instead.
"""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from lxml import etree

from server import migrate
from server.config import Settings
from server.main import create_app
from server.services import tokens
from tests.conftest import EXAMPLES, REPO
from tests.server.suites import sim_report, versions
from tests.web.server import free_port, serve

XSD = REPO / "tests" / "data" / "junit.xsd"
C1, C2 = "scale_add_32x64", "scale_add_64x256"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("ci-live")
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data / 'db.sqlite'}",
                        broker_url=f"sqla+sqlite:///{data / 'broker.db'}")
    migrate.upgrade(settings.resolved_database_url)
    app = create_app(settings, start_sweeper=False)
    with app.state.sessionmaker() as session:
        # The CI pipeline's token submits and uploads (`crosscheck upload`, a bisect's culprits) as one tenant.
        grants = {"read": ["read"], "submit": ["submit", "upload"], "worker": ["worker"]}
        secrets = {kind: tokens.create(session, f"{kind}-bot", scopes)[1] for kind, scopes in grants.items()}
        session.commit()
    with serve(app) as base:
        yield {"url": base, "tokens": secrets, "settings": settings}
    app.state.engine.dispose()


def make_checkout(root: Path, names: tuple[str, ...] = ("alpha", "beta")) -> Path:
    """A checkout with operators laid out like a team's repository (nested folders)."""
    for name in names:
        dest = root / "ops" / name
        shutil.copytree(EXAMPLES / "scale_add", dest)
        cases = json.loads((dest / "test_cases.json").read_text())
        cases["op_name"] = name
        (dest / "test_cases.json").write_text(json.dumps(cases))
    (root / "README.md").write_text("not an operator\n")
    return root


def files_of(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}


class Responder:
    """Answers queued SIM jobs with recorded reports, as a worker would over the internal API."""

    def __init__(self, live: dict[str, Any], checkout: Path, planted: dict[str, dict[str, str]] | None = None):
        self.http = httpx.Client(base_url=live["url"] + "/api/v1", timeout=30,
                                 headers={"Authorization": f"Bearer {live['tokens']['worker']}"})
        self.read = {"Authorization": f"Bearer {live['tokens']['read']}"}
        self.checkout, self.planted = checkout, planted or {}
        self.stop = threading.Event()
        self.answered: list[int] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Responder:
        r = self.http.post("/workers/heartbeat", json={"name": "rec@test", "host": "t", "queues": ["sim"],
                                                       "capabilities": {"versions": versions()}})
        assert r.status_code == 200, r.text
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        self.http.close()

    def _loop(self) -> None:
        while not self.stop.is_set():
            for job in self.http.get("/jobs", params={"limit": 100}, headers=self.read).json()["items"]:
                if job["status"] == "queued":
                    self._answer(job)
            self.stop.wait(0.2)

    def _answer(self, job: dict[str, Any]) -> None:
        if self.http.post(f"/internal/jobs/{job['id']}/claim", json={"worker": "rec@test", "attempt": 1}).status_code != 200:
            return
        folder = self.checkout / "ops" / job["operator"]
        report = sim_report(files_of(folder), job["operator"], verdicts=self.planted.get(job["operator"]))
        r = self.http.post(f"/internal/jobs/{job['id']}/result", data={"attempt": "1", "report": json.dumps(report)})
        assert r.status_code == 200, r.text
        self.answered.append(job["id"])


def crosscheck(live: dict[str, Any], *args: str, token: str | None = "submit",
               timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSCHECK_")}
    env.update(COLUMNS="80", PYTHONPATH=str(REPO), DATA_DIR=str(live["settings"].data_dir / "client"))
    if token:
        env["CROSSCHECK_TOKEN"] = live["tokens"][token]
    return subprocess.run([sys.executable, "-m", "server.cli", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=timeout_s, check=False)


def ci(live: dict[str, Any], checkout: Path, *extra: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return crosscheck(live, "ci", "run", str(checkout), "--server", live["url"], "--suite", "nightly",
                      "--label", "branch=main", *extra, **kwargs)


def junit_cases(path: Path) -> dict[str, Any]:
    """Validate against our JUnit schema and return the testcases by name."""
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.parse(str(path))
    schema.assertValid(doc)
    return {tc.get("classname").rsplit(".", 1)[1] + " " + tc.get("name"): tc for tc in doc.iter("testcase")}


def test_ci_run_gates_on_regressions_reuses_and_writes_junit(live, tmp_path):
    checkout = make_checkout(tmp_path / "repo")
    with Responder(live, checkout) as worker:
        first = ci(live, checkout, "--label", "commit=aaa1111", "--junit", str(tmp_path / "first.xml"))
    assert first.returncode == 0, first.stderr + first.stdout
    assert "nothing to compare with" in first.stdout and "Suite page: http" in first.stdout
    assert len(worker.answered) == 2
    cases = junit_cases(tmp_path / "first.xml")
    assert set(cases) == {f"{op} {c} [sim]" for op in ("alpha", "beta") for c in (C1, C2)}
    props = {p.get("name"): p.get("value") for p in cases[f"alpha {C1} [sim]"].iter("property")}
    assert props["verdict"] == "sim_garbage_graph_ok" and props["mode"] == "sim"
    assert props["provenance"] == "worker rec@test" and "graph_max_abs_diff" in props
    assert not list(cases[f"alpha {C1} [sim]"].iter("failure"))

    # Unchanged: everything is reused, no job runs, and the run still passes.
    with Responder(live, checkout) as worker:
        again = ci(live, checkout, "--label", "commit=aaa1111")
    assert again.returncode == 0, again.stderr + again.stdout
    assert worker.answered == [] and "4 reused" in again.stdout and "reused SIM (job" in again.stderr

    # A planted regression fails the default gate, lists it, and marks the JUnit case failed.
    with Responder(live, checkout, {"alpha": {C1: "crash"}}):
        bad = ci(live, checkout, "--no-reuse", "--label", "commit=bbb2222", "--junit", str(tmp_path / "bad.xml"))
    assert bad.returncode == 1, bad.stderr + bad.stdout
    assert "1 regression," in bad.stdout and f"regression alpha / {C1} (SIM)" in bad.stdout
    failure = next(junit_cases(tmp_path / "bad.xml")[f"alpha {C1} [sim]"].iter("failure"))
    assert failure.get("type") == "crash"
    assert max(len(line) for line in bad.stdout.splitlines()) <= 80

    # The same failure under --fail-on never passes; any-fail fails even without a regression.
    with Responder(live, checkout, {"alpha": {C1: "crash"}}):
        never = ci(live, checkout, "--no-reuse", "--fail-on", "never")
        anyfail = ci(live, checkout, "--no-reuse", "--fail-on", "any-fail")
    assert never.returncode == 0 and anyfail.returncode == 1, never.stderr + anyfail.stderr


def test_only_the_named_operators_run(live, tmp_path):
    checkout = make_checkout(tmp_path / "repo", ("alpha", "beta", "gamma"))
    with Responder(live, checkout) as worker:
        done = ci(live, checkout, "--op", "beta", "--no-reuse", "--junit", str(tmp_path / "j.xml"))
    assert done.returncode == 0, done.stderr
    assert len(worker.answered) == 1 and {k.split()[0] for k in junit_cases(tmp_path / "j.xml")} == {"beta"}


@pytest.mark.parametrize("problem", ["unreachable", "bad token", "read-only token", "empty checkout",
                                     "unknown operator", "unknown option", "bad label", "no suite",
                                     "bad pypto version", "pypto no worker has", "wrong token"])
def test_the_client_fails_loudly(live, tmp_path, problem):
    checkout = make_checkout(tmp_path / "repo", ("alpha",))
    token: str | None = "submit"
    args: list[str] = ["ci", "run", str(checkout), "--server", live["url"], "--suite", "nightly"]
    if problem == "unreachable":
        args[4] = f"http://127.0.0.1:{free_port()}"
    elif problem == "bad token":
        token = None
    elif problem == "read-only token":
        token = "read"
    elif problem == "empty checkout":
        args[2] = str(tmp_path / "nothing")
        (tmp_path / "nothing").mkdir()
    elif problem == "unknown operator":
        args += ["--op", "nosuchop"]
    elif problem == "unknown option":
        args += ["--fail-on-everything"]
    elif problem == "bad label":
        args += ["--label", "branch"]
    elif problem == "no suite":
        args = args[:5]
    elif problem == "wrong token":
        token = None
        args += ["--token", "cc_not-a-token-the-server-issued"]
    elif problem == "bad pypto version":
        args += ["--pypto", "0.2 ; rm"]
    elif problem == "pypto no worker has":
        args += ["--pypto", "9.9.9"]
    env_token = token
    proc = crosscheck(live, *args, token=env_token)
    want = {"unreachable": 3, "pypto no worker has": 3}.get(problem, 2)
    assert proc.returncode == want, (problem, proc.stdout, proc.stderr)
    needle = {"unreachable": "cannot reach", "bad token": "token", "read-only token": "submit",
              "empty checkout": "no runnable operator", "unknown operator": "nosuchop",
              "unknown option": "unrecognized arguments", "bad label": "KEY=VALUE", "no suite": "--suite",
              "bad pypto version": "is not a pypto version", "wrong token": "refused the token", "pypto no worker has": "no online worker has pypto 9.9.9"}[problem]
    assert needle in " ".join(proc.stderr.split()), (problem, proc.stderr)  # rich wraps at 80 columns


def test_upload_stores_reports_and_junit_with_provenance(live, tmp_path, make_npu_report_for_upload):
    report = tmp_path / "scale_add.npu.json"
    report.write_text(json.dumps(make_npu_report_for_upload()))
    args = ["upload", str(report), "--server", live["url"], "--suite", "npu-lab", "--run-key", "lab-1",
            "--label", "branch=main", "--label", "commit=ccc3333"]
    first = crosscheck(live, *args)
    assert first.returncode == 0, first.stderr
    assert "stored 2, already there 0" in first.stdout and "/suite-runs/" in first.stdout
    again = crosscheck(live, *args)
    assert again.returncode == 0 and "stored 0, already there 2" in again.stdout
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    refused = crosscheck(live, "upload", str(bad), "--server", live["url"], "--suite", "npu-lab")
    assert refused.returncode == 2 and "runtime report (.json)" in " ".join(refused.stderr.split())  # wrapped at 80 columns
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": 1}')
    assert crosscheck(live, "upload", str(broken), "--server", live["url"], "--suite", "npu-lab").returncode == 2


@pytest.fixture
def make_npu_report_for_upload(sim_report, make_npu_report) -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        report = make_npu_report(sim_report, {})
        report["environment"].update(cann="8.0.RC3", device="npu:1")
        return report
    return make


@pytest.mark.slow
def test_ci_run_with_the_real_worker(live, tmp_path, calculator_cache):
    """The whole path: discovery, the suite-run API, the worker job function, the runtime compiling SIM."""
    from worker.client import ApiClient
    from worker.jobs import WorkerContext, run_job

    checkout = make_checkout(tmp_path / "repo", ("alpha",))
    api = ApiClient(live["url"], live["tokens"]["worker"])
    ctx = WorkerContext(api=api, name="real@test", cache_dir=calculator_cache, heartbeat_s=5.0)
    stop = threading.Event()
    read = {"Authorization": f"Bearer {live['tokens']['read']}"}

    def work() -> None:
        while not stop.is_set():
            for job in httpx.get(live["url"] + "/api/v1/jobs", headers=read, timeout=10).json()["items"]:
                if job["status"] == "queued":
                    run_job(ctx, job["id"], job["attempts"])
            stop.wait(0.3)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        done = ci(live, checkout, "--no-reuse", "--fail-on", "any-fail", "--junit", str(tmp_path / "real.xml"),
                  timeout_s=600)
    finally:
        stop.set()
        thread.join(120)
        ctx.close()
    assert done.returncode == 0, done.stdout + done.stderr
    cases = junit_cases(tmp_path / "real.xml")
    verdict = {k: {p.get("name"): p.get("value") for p in tc.iter("property")}["verdict"] for k, tc in cases.items()}
    assert verdict == {f"alpha {c} [sim]": "sim_garbage_graph_ok" for c in (C1, C2)}


@pytest.mark.slow
def test_ci_run_on_a_gym_shaped_checkout_with_the_real_worker(live, tmp_path, calculator_cache):
    """Operators as a gym checkout holds them (a test script, a test module, an in-place package) reach the
    worker as bundles of what their job needs, and get the same verdicts as `crosscheck run` (docs/realops.md §5)."""
    from worker.client import ApiClient
    from worker.jobs import WorkerContext, run_job

    checkout = tmp_path / "gym"
    shutil.copytree(EXAMPLES / "gym-checkout", checkout)
    api = ApiClient(live["url"], live["tokens"]["worker"])
    ctx = WorkerContext(api=api, name="real@test", cache_dir=calculator_cache, heartbeat_s=5.0)
    stop = threading.Event()
    read = {"Authorization": f"Bearer {live['tokens']['read']}"}

    def work() -> None:
        while not stop.is_set():
            for job in httpx.get(live["url"] + "/api/v1/jobs", headers=read, timeout=10).json()["items"]:
                if job["status"] == "queued":
                    run_job(ctx, job["id"], job["attempts"])
            stop.wait(0.3)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        done = ci(live, checkout, "--no-reuse", "--op", "axpy", "--op", "RowSquareMean", "--op", "inplace_add_norm",
                  "--junit", str(tmp_path / "gym.xml"), timeout_s=900)
    finally:
        stop.set()
        thread.join(120)
        ctx.close()
    assert done.returncode == 0, done.stdout + done.stderr
    cases = junit_cases(tmp_path / "gym.xml")
    verdict = {k: {p.get("name"): p.get("value") for p in tc.iter("property")}["verdict"] for k, tc in cases.items()}
    assert verdict == {
        "axpy axpy_small [sim]": "sim_garbage_graph_ok", "axpy axpy_wide [sim]": "sim_garbage_graph_ok",
        "row_square_mean test_level0 [sim]": "sim_garbage_graph_ok",
        "row_square_mean test_level1 [sim]": "sim_garbage_graph_ok",
        "inplace_add_norm level0 [sim]": "sim_garbage_graph_ok", "inplace_add_norm level1 [sim]": "sim_garbage_graph_ok",
    }


class Annotated(Responder):
    """A Responder whose reports carry a lint finding and, on a crash, a diagnosis at file:line."""

    def _answer(self, job: dict[str, Any]) -> None:
        if self.http.post(f"/internal/jobs/{job['id']}/claim", json={"worker": "rec@test", "attempt": 1}).status_code != 200:
            return
        folder = self.checkout / "ops" / job["operator"]
        report = sim_report(files_of(folder), job["operator"], verdicts=self.planted.get(job["operator"]))
        report["lint"] = [{"rule": "unused-tile", "severity": "warning", "file": "scale_add_impl.py", "line": 3,
                           "message": "a tile is declared and never read"}]
        for case in report["cases"]:
            if case["verdict"] == "crash":
                case["diagnosis"] = [{"rule": "vec-tile-shape-not-set", "cause": "no vec tile shape", "fix": "set it",
                                      "sim_only": False, "file": "scale_add_impl.py", "line": 7}]
        r = self.http.post(f"/internal/jobs/{job['id']}/result", data={"attempt": "1", "report": json.dumps(report)})
        assert r.status_code == 200, r.text
        self.answered.append(job["id"])


def test_ci_run_says_there_was_no_baseline_links_jobs_and_annotates(live, tmp_path):
    """issue 35: a first run says why it passes; every failing case and JUnit testcase links its job page; lint
    findings and diagnoses become GitHub annotations and a GitLab code-quality report at file:line."""
    checkout = make_checkout(tmp_path / "repo", ("alpha",))
    args = ("--suite", "annotated", "--label", "branch=first")
    with Annotated(live, checkout):
        first = crosscheck(live, "ci", "run", str(checkout), "--server", live["url"], *args, "--no-reuse",
                           "--junit", str(tmp_path / "first.xml"), "--annotations", "github=-")
    assert first.returncode == 0, first.stderr + first.stdout
    text = " ".join(first.stdout.split())
    assert ("gate: passed (exit 0): no baseline (no earlier run of this suite on this branch), so nothing to regress "
            "against") in text
    assert "kernel defects only" in text
    assert "::warning file=ops/alpha/scale_add_impl.py,line=3,title=lint unused-tile::a tile is declared" in first.stdout
    for tc in junit_cases(tmp_path / "first.xml").values():
        url = {p.get("name"): p.get("value") for p in tc.iter("property")}["url"]
        assert url.startswith(f"{live['url']}/jobs/") and url in tc.find("system-out").text
        assert httpx.get(url, headers={"Authorization": f"Bearer {live['tokens']['read']}"}).status_code == 200
    with Annotated(live, checkout, {"alpha": {C1: "crash"}}):
        bad = crosscheck(live, "ci", "run", str(checkout), "--server", live["url"], *args, "--no-reuse",
                         "--annotations", f"gitlab={tmp_path / 'quality.json'}")
    assert bad.returncode == 1, bad.stderr + bad.stdout
    text = " ".join(bad.stdout.split())
    assert "gate: failed against run" in text and "1 regression" in text
    assert f"alpha / {C1} (SIM): kernel defect: crash" in text and f"{live['url']}/jobs/" in text
    quality = json.loads((tmp_path / "quality.json").read_text())
    where = {(q["location"]["path"], q["location"]["lines"]["begin"], q["severity"]) for q in quality}
    assert where == {("ops/alpha/scale_add_impl.py", 3, "minor"), ("ops/alpha/scale_add_impl.py", 7, "major")}


def test_a_refused_token_says_where_tokens_come_from(live, tmp_path):
    """After `crosscheck up --data-dir D` the admin token is in D/tokens.json: a 401 says so, and --help
    names every source."""
    checkout = make_checkout(tmp_path / "repo", ("alpha",))
    for cmd in (["ci", "run", str(checkout), "--suite", "nightly"], ["submit", str(checkout / "ops" / "alpha")]):
        proc = crosscheck(live, *cmd, "--server", live["url"], "--token", "cc_not-a-token-the-server-issued",
                          token=None)
        assert proc.returncode == 2, proc.stderr
        err = " ".join(proc.stderr.split())
        assert "HTTP 401" in err and "crosscheck up --data-dir D" in err and "D/tokens.json" in err, err
        assert str(live["settings"].data_dir / "client" / "tokens.json") in err.replace(" ", "") or \
            "client/tokens.json" in err.replace(" ", ""), err
    helped = " ".join(crosscheck(live, "ci", "run", "--help", token=None).stdout.split())
    for source in ("--token", "$CROSSCHECK_TOKEN", "$DATA_DIR/tokens.json", "crosscheck up --data-dir D"):
        assert source in helped, source


def test_submit_wait_prints_each_job_s_link(live, tmp_path):
    checkout = make_checkout(tmp_path / "repo", ("alpha",))
    with Responder(live, checkout):
        done = crosscheck(live, "submit", str(checkout / "ops" / "alpha"), "--server", live["url"], "--wait", "--fresh")
    assert done.returncode == 0, done.stderr + done.stdout
    links = re.findall(rf"{re.escape(live['url'])}/jobs/(\d+)", done.stderr)
    assert links and httpx.get(f"{live['url']}/jobs/{links[0]}",
                               headers={"Authorization": f"Bearer {live['tokens']['read']}"}).status_code == 200
