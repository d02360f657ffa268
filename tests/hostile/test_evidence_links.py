"""Attacks through links in the job dir (issue 8 items 1 and 2), through the real runtime.

Each runs a submission that plants links, asserts that nothing leaked into the report or the
artifacts and nothing was created outside the job dir, then runs the old harness function on
the same job dir to show the attack worked there.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from runtime.evidence import artifacts
from runtime.report import Environment, Report, Submission
from tests.hostile import unfixed_evidence as unfixed
from tests.hostile.evidence_kit import NORMAL, package, run, secret_file, tree_text

pytestmark = pytest.mark.slow
ROOT_HOME = Path("/root")


@pytest.fixture()
def secrets(tmp_path):
    """/etc/shadow's first line, a tokens.json in a 0700 data dir, and a root-only file in /root."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    tokens, token = secret_file(data, "tokens.json")
    root_file, root_secret = secret_file(ROOT_HOME, f".crosscheck-hostile-{uuid.uuid4().hex[:8]}")
    shadow = Path("/etc/shadow").read_text().splitlines()[0]
    try:
        yield {"/etc/shadow": shadow, str(tokens): token, str(root_file): root_secret}
    finally:
        root_file.unlink()


def _report(case) -> Report:
    return Report(submission=Submission("package", "op", "0" * 64), mode="sim",
                  environment=Environment("p", "t", "3.11", "h", None), cases=[case])


def test_plog_links_to_secrets_leak_nothing(warm_sim, tmp_path, secrets):
    targets = list(secrets)
    body = f'''
import os
logs = os.environ["ASCEND_PROCESS_LOG_PATH"]
plog = os.path.join(logs, "debug", "plog")
os.makedirs(plog, exist_ok=True)
for i, target in enumerate({targets!r}):
    os.symlink(target, os.path.join(plog, f"pypto-log-{{i}}_1.log"))
os.symlink(os.path.dirname({targets[1]!r}), os.path.join(logs, "data.log"))  # a linked folder
os.symlink("/root", os.path.join(logs, "debug", "root"))
''' + NORMAL
    case, _ = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    # Planting links in pypto's log dir is tampering with the evidence, reported as it happens (runtime/fence/audit.py).
    assert case.verdict == "suspect_fake_pass" and "tampered with the evidence" in case.verdict_reason, case.verdict_reason
    refused = "\n".join(case.evidence["refused_files"])
    assert refused.count("a symbolic link") >= len(targets) + 2, refused
    dest = tmp_path / "artifacts"
    files = artifacts.collect(_report(case), dest)
    assert files and all(not (dest / f).is_symlink() for f in files)
    shown = _report(case).to_json() + tree_text(dest)
    for where, value in secrets.items():
        assert value not in shown, f"{where} leaked"
    # The harness before the fix read and copied every one of them.
    job_dir = Path(case.job_dir)
    old_text = unfixed.read_plog(job_dir)
    old_copies = tree_text(tmp_path / "old") if unfixed.collect_artifacts(job_dir, [], tmp_path / "old") else ""
    for where, value in secrets.items():
        assert value in old_text and value in old_copies, f"the unfixed harness did not leak {where}"


def test_trace_through_a_planted_link_creates_nothing(warm_sim, tmp_path):
    """merged_swimlane.json planted as a dangling link, and a launch event naming its folder."""
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    target = outside / "ld.so.preload"  # what a root-owned write through the link would create
    body = f'''
import json, os
from runtime.evidence import instrument
fake = os.path.join(os.environ["TILE_FWK_OUTPUT_DIR"], "output_20990101_000000_000000_1_")
sim = os.path.join(fake, "CostModelSimulationOutput")
os.makedirs(sim)
with open(os.path.join(sim, "_simulate.swim.json"), "w") as f:
    json.dump([{{"blockIdx": 0, "coreType": "AIV", "tasks": [{{"taskId": "/tmp/x.so", "execStart": 0,
                                                               "execEnd": 1800}}]}}], f)
os.symlink({str(target)!r}, os.path.join(sim, "merged_swimlane.json"))
out = torch.empty_like(x)
op_kernel(x, out)
instrument._recorder.events.emit("launch", kernel="op_kernel", output_written=[False, False],
                                  arg_shapes=[[16, 32], [16, 32]], duration_s=0.1, output_dir=fake, error="")
return out
'''
    work = tmp_path / "work"
    case, _ = run(package(tmp_path, body), warm_sim, work)
    assert not os.path.lexists(target) and list(outside.iterdir()) == []
    assert case.verdict == "suspect_fake_pass" and "not corroborated" in case.verdict_reason, case.verdict_reason
    assert case.evidence["launches_corroborated"] == 1 and case.kernel_launches == 1
    # Our own trace of the real launch went to the harness's folder, not into the job dir.
    assert (Path(case.evidence_dir) / "launch0" / "merged_swimlane.json").is_file()
    for call in (Path(case.job_dir) / "output").iterdir():  # we wrote nothing there; the planted link stays
        trace = call / "CostModelSimulationOutput" / "merged_swimlane.json"
        assert not os.path.lexists(trace) or trace.is_symlink()
    # The unfixed write_trace, given the forged event's folder, wrote the file as root.
    fake = Path(case.launches[1].output_dir)
    unfixed.write_trace(fake)
    assert target.is_file() and json.loads(target.read_text())["traceEvents"]


def test_launch_paths_outside_the_job_dir_are_never_opened(warm_sim, tmp_path):
    """A launch event naming a folder elsewhere (here: the harness's /root) is not corroboration."""
    elsewhere = tmp_path / "elsewhere" / "output_20990101_000000_000000_1_"
    (elsewhere / "CostModelSimulationOutput").mkdir(parents=True)
    (elsewhere / "CostModelSimulationOutput" / "_simulate.swim.json").write_text("[]")
    (elsewhere / "program.json").write_text("{}")
    body = f'''
from runtime.evidence import instrument
instrument._recorder.events.emit("launch", kernel="op_kernel", output_written=[False, True],
                                  arg_shapes=[[16, 32], [16, 32]], duration_s=0.1,
                                  output_dir={str(elsewhere)!r}, error="")
return torch.empty_like(x)
'''
    case, _ = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    assert case.kernel_launches == 0 and case.verdict == "not_run", case.verdict_reason
    assert "names no folder in the job's output dir" in case.evidence["uncorroborated"][0]
