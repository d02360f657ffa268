"""`crosscheck ci run --benchmark`: a pypto-gym benchmark run as one suite run, every task an operator.

The report dir is written for the test (tests/runtime/kernelbench_tasks.py); the jobs run through the real
worker job function and the real runtime, so the verdicts are graph verify's.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx2 as httpx
import pytest

from runtime.intake import benchmark_run
from tests.runtime import kernelbench_tasks as tasks
from tests.server.suites import versions
from tests.server.test_ci_client import ci, junit_cases, live  # noqa: F401 - the live server fixture

pytestmark = pytest.mark.slow  # real pypto compiles

# report/<level>/<subdir>/ -> (the operator's name, its kind, the KernelBench source the gym recorded)
RUN = {
    ("level1", "BiasReLU"): ("BiasReLU", "correct", "19_BiasReLU.py"),
    ("level2", "Gemm_Scale_BatchNorm_33"): ("Gemm_Scale_BatchNorm", "correct", "33_Gemm_Scale_BatchNorm.py"),
    ("level2", "Gemm_Scale_BatchNorm_39"): ("Gemm_Scale_BatchNorm", "wrong", "39_Gemm_Scale_BatchNorm.py"),
}


def make_benchmark_run(root: Path) -> Path:
    """A run's report dir as the gym writes it: report/<level>/<op>/custom/<op>/ and result.json beside."""
    for (level, subdir), (op, kind, source) in RUN.items():
        case_dir = root / "report" / level / subdir
        tasks.write(case_dir, op, kind)
        (case_dir / "result.json").write_text(json.dumps({"op_name": op, "level": level, "source_file": source,
                                                          "overall_status": "success", "correctness": True}))
    return root


def test_every_task_is_an_operator_named_by_level_and_task(tmp_path):
    found = benchmark_run.discover(make_benchmark_run(tmp_path / "run"))
    assert [(o.name, o.route) for o in found] == [
        ("level1-19_BiasReLU", "task"), ("level2-33_Gemm_Scale_BatchNorm", "task"),
        ("level2-39_Gemm_Scale_BatchNorm", "task")]
    assert all(o.task and o.task.endswith("task_desc.py") for o in found)


def test_an_operator_dir_two_tasks_name_is_not_guessed(tmp_path):
    tasks.write(tmp_path / "kb", "Gemm_Scale_BatchNorm").joinpath("task_desc.py").unlink()
    custom = tmp_path / "kb" / "custom"
    (custom / "level2").mkdir()
    (custom / "Gemm_Scale_BatchNorm").rename(custom / "level2" / "Gemm_Scale_BatchNorm")
    level = tmp_path / "kb" / "KernelBench" / "level2"
    level.mkdir(parents=True)
    for stem in ("33_Gemm_Scale_BatchNorm", "39_Gemm_Scale_BatchNorm", "12_BiasReLU"):
        (level / f"{stem}.py").write_text(tasks.BIAS_RELU_TASK)
    tasks.write(custom / "level2" / "x", "BiasReLU").joinpath("task_desc.py").unlink()
    (custom / "level2" / "x" / "custom" / "BiasReLU").rename(custom / "level2" / "BiasReLU")
    found = {o.name: o for o in benchmark_run.discover(tmp_path / "kb")}
    assert found["level2-12_BiasReLU"].task == "KernelBench/level2/12_BiasReLU.py"
    assert found["level2-Gemm_Scale_BatchNorm"].route == "none"
    assert "33_Gemm_Scale_BatchNorm.py, 39_Gemm_Scale_BatchNorm.py" in found["level2-Gemm_Scale_BatchNorm"].problem


def test_ci_run_benchmark_makes_one_suite_run_and_reuses_unchanged_tasks(live, tmp_path, calculator_cache):  # noqa: F811
    from worker.client import ApiClient
    from worker.jobs import WorkerContext, run_job

    run_dir = make_benchmark_run(tmp_path / "run")
    ctx = WorkerContext(api=ApiClient(live["url"], live["tokens"]["worker"]), name="bench@test",
                        cache_dir=calculator_cache, heartbeat_s=5.0)
    stop = threading.Event()
    read = {"Authorization": f"Bearer {live['tokens']['read']}"}
    ran: list[int] = []

    def work() -> None:
        while not stop.is_set():
            for job in httpx.get(live["url"] + "/api/v1/jobs", headers=read, timeout=10).json()["items"]:
                if job["status"] == "queued":
                    ran.append(job["id"])
                    run_job(ctx, job["id"], job["attempts"])
            stop.wait(0.3)

    def beat() -> None:  # reuse needs an online worker reporting its versions, as a worker's heartbeat does
        answer = httpx.post(live["url"] + "/api/v1/workers/heartbeat", timeout=10, json={
            "name": "bench@test", "host": "t", "queues": ["sim"], "capabilities": {"versions": versions()}},
            headers={"Authorization": f"Bearer {live['tokens']['worker']}"})
        assert answer.status_code == 200, answer.text

    beat()
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        first = ci(live, run_dir, "--benchmark", "--suite", "kernelbench", "--fail-on", "any-fail",
                   "--junit", str(tmp_path / "first.xml"), timeout_s=600)
        jobs_first = len(ran)
        beat()
        second = ci(live, run_dir, "--benchmark", "--suite", "kernelbench", "--fail-on", "any-fail",
                    timeout_s=600)
    finally:
        stop.set()
        thread.join(120)
        ctx.close()
    assert first.returncode == 1, first.stdout + first.stderr  # the wrong task is a kernel defect
    verdicts = {k: {p.get("name"): p.get("value") for p in tc.iter("property")}["verdict"]
                for k, tc in junit_cases(tmp_path / "first.xml").items()}
    assert {k: v for k, v in verdicts.items() if k.endswith("[npu]")} == {
        f"{name} task [npu]": "pass" for name in ("level1-19_BiasReLU", "level2-33_Gemm_Scale_BatchNorm",
                                                  "level2-39_Gemm_Scale_BatchNorm")}  # the gym's word, uploaded
    verdicts = {k: v for k, v in verdicts.items() if k.endswith("[sim]")}
    assert verdicts == {"level1-19_BiasReLU task [sim]": "sim_garbage_graph_ok",
                        "level2-33_Gemm_Scale_BatchNorm task [sim]": "sim_garbage_graph_ok",
                        "level2-39_Gemm_Scale_BatchNorm task [sim]": "graph_fail"}
    assert jobs_first == 3 and len(ran) == 3, (ran, second.stderr)  # the second night reused all three
    assert second.returncode == 1 and "reused" in second.stderr
    assert "the gym's own verdicts: 3 of 3 task(s) uploaded" in first.stderr
    ops = httpx.get(live["url"] + "/api/v1/operators", headers=read, params={"limit": 50}, timeout=10).json()["items"]
    combined = {o["name"]: o.get("combined_verdict") or o.get("verdict") for o in ops if o["name"].startswith("level")}
    # The gym said PASS for all three, unverified (no CANN or card recorded): never "NPU ok", and graph
    # verify's wrong maths on the 39_ task stands.
    assert combined == {"level1-19_BiasReLU": "sim_garbage_graph_ok", "level2-33_Gemm_Scale_BatchNorm":
                        "sim_garbage_graph_ok", "level2-39_Gemm_Scale_BatchNorm": "kernel_defect"}, combined
    _check_benchmark_page(live, read)


def _check_benchmark_page(live, read) -> None:  # noqa: F811 - `live` is the server's dict here
    """The benchmark view of that suite: the disagreeing task first, levels, and a phone's width."""
    from playwright import sync_api

    from tests.signin import SESSION_COOKIE, session_cookie
    from tests.web.layout import layout_problems
    from tests.web.test_suite_browser import ARGS, CHROMIUM, SHOTS

    html = httpx.get(live["url"] + "/benchmarks/kernelbench", headers={**read, "accept": "text/html"}, timeout=10)
    assert html.status_code == 200, html.text[:300]
    rows = html.text.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("<tr")[1:]
    assert "level2-39_Gemm_Scale_BatchNorm" in rows[0] and "≠ gym" in rows[0]  # ours graph fail, the gym's pass
    assert "1 disagrees with the gym" in html.text and "ours 1/2" in html.text and "gym 2/2" in html.text
    api = httpx.get(live["url"] + "/api/v1/benchmarks/kernelbench", headers=read, timeout=10).json()
    assert [t["name"] for t in api["tasks"] if t["disagrees"]] == ["level2-39_Gemm_Scale_BatchNorm"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for width in (1280, 390):
            context = browser.new_context(viewport={"width": width, "height": 900})
            context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["url"], live["tokens"]["read"]),
                                  "url": live["url"]}])
            page = context.new_page()
            page.goto(live["url"] + "/benchmarks/kernelbench")
            assert page.locator("h1").inner_text().startswith("Benchmark"), page.url  # not the sign-in page
            assert not layout_problems(page), (width, layout_problems(page))
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"benchmark-{width}.png"), full_page=True)
            context.close()
        browser.close()
