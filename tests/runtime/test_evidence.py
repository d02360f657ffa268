"""The harness's own evidence: byte recompare, launch corroboration, contradictions, the integrity seal."""
from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import pytest
import torch

from runtime.evidence import corroborate, dumps, evidence, metrics
from runtime.fence import integrity
from runtime.fence.jobenv import JobDirs
from runtime.fence.jobfiles import JobFiles

TOL = (1e-3, 1e-3)


def _dump(folder: Path, golden: torch.Tensor, output: torch.Tensor, **extra) -> list[str]:
    dumps.write(folder, [dumps.OutputDump(golden=golden, output=output, **extra)])
    return [dumps.sha256(golden)]


def _same(job: dict, ours: dict) -> None:
    for key in dumps.DECIDING_KEYS + ("numel", "output_abs_max", "golden_abs_max", "mismatch_ratio"):
        a, b = job[key], ours[key]
        assert a == b or (isinstance(a, float) and math.isclose(a, b, rel_tol=1e-12)), (key, a, b)
    assert math.isclose(job["mean_abs_diff"], ours["mean_abs_diff"], rel_tol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_chunked_recompare_matches_the_jobs_compare(tmp_path, monkeypatch, dtype):
    monkeypatch.setattr(dumps, "CHUNK_ELEMENTS", 1000)  # many chunks, a partial last one
    torch.manual_seed(0)
    golden = torch.randn(77, 53).to(dtype)
    output = golden + (torch.randn(77, 53) * 1e-3).to(dtype)
    output[3, 4], output[70, 50], output[10, 10] = float("nan"), float("inf"), 5.0
    sha = _dump(tmp_path, golden, output)
    ours = dumps.recheck(JobFiles(tmp_path), TOL, False, sha)["metrics"]
    _same(metrics.compare(output, golden, *TOL), ours)


def test_shape_mismatch_and_graph_split(tmp_path):
    golden, output, before = torch.ones(4, 4), torch.ones(2, 8), torch.full((4, 4), 9.0)
    dumps.write(tmp_path, [dumps.OutputDump(golden=golden, output=golden.clone(), before=before,
                                            first_post_sha256=dumps.sha256(golden), last_post_sha256=dumps.sha256(golden))])
    checked = dumps.recheck(JobFiles(tmp_path), TOL, True, [dumps.sha256(golden)])
    assert checked["metrics"]["mismatch_count"] == 16 and checked["graph_metrics"]["bit_identical"]
    (first,) = checked["outputs"]
    assert first["launch_wrote"] is True and first["changed_after_launch"] is False
    assert first["metrics"]["mismatch_count"] == 16 and first["graph_metrics"]["bit_identical"]
    other = tmp_path / "other"
    _dump(other, golden, output)
    m = dumps.recheck(JobFiles(other), TOL, False, [dumps.sha256(golden)])["metrics"]
    assert not m["shape_match"] and m["mismatch_ratio"] == 1.0 and m["numel"] == 16


def test_bytes_changed_after_the_last_launch_are_seen(tmp_path):
    golden = torch.arange(8.0)
    after_launch = torch.zeros(8)
    _dump(tmp_path, golden, golden.clone(), before=torch.zeros(8),
          first_post_sha256=dumps.sha256(after_launch), last_post_sha256=dumps.sha256(after_launch))
    checked = dumps.recheck(JobFiles(tmp_path), TOL, False, [dumps.sha256(golden)])
    (first,) = checked["outputs"]
    assert first["launch_wrote"] is False and first["changed_after_launch"] is True


@pytest.mark.parametrize("tamper", ["golden edited", "no golden hash", "size", "link", "no manifest"])
def test_tampered_dumps_are_refused(tmp_path, tamper):
    golden = torch.arange(8.0)
    sha = _dump(tmp_path, golden, golden.clone())
    if tamper == "golden edited":
        (tmp_path / "golden-0.bin").write_bytes(dumps.tensor_bytes(golden * 0))
    elif tamper == "no golden hash":
        sha = None
    elif tamper == "size":
        with open(tmp_path / "output-0.bin", "ab") as f:
            f.write(b"\0" * 4)
    elif tamper == "link":
        (tmp_path / "output-0.bin").unlink()
        (tmp_path / "output-0.bin").symlink_to(tmp_path / "golden-0.bin")
    else:
        (tmp_path / dumps.MANIFEST).unlink()
    with pytest.raises(dumps.DumpError):
        dumps.recheck(JobFiles(tmp_path), TOL, False, sha)


def test_disagreement_names_the_value():
    ok = {"shape_match": True, "mismatch_count": 0, "nan_count": 0, "inf_count": 0, "bit_identical": False,
          "max_abs_diff": 1e-7}
    assert dumps.disagreement(ok, dict(ok)) is None
    assert "mismatch_count" in dumps.disagreement(ok, {**ok, "mismatch_count": 3})


# --- corroboration -------------------------------------------------------------------------------

REQUEST = {"mode": "sim", "env": {"TILE_FWK_OUTPUT_DIR": "/job/output"}}


def _launch(output_dir: str, error: str = "") -> dict:
    return {"event": "launch", "kernel": "k", "output_dir": output_dir, "error": error}


def test_launch_events_count_only_with_their_own_call_folder():
    dirs = JobDirs(Path("/job"))
    calls = {"output_a": {"compiled": True, "cost_model": True}, "output_b": {"compiled": False, "cost_model": True}}
    events = [_launch("/job/output/output_a"), _launch("/job/output/output_a"), _launch("/job/output/output_b"),
              _launch("/elsewhere/output_a"), _launch("/job/output/../output/output_c"), _launch("", "boom")]
    matched = evidence._match(events, calls, REQUEST, dirs)
    assert [m["call"] for m in matched] == ["output_a", None, None, None, None, None]
    assert "claimed by an earlier launch" in matched[1]["why"] and "lacks pypto's" in matched[2]["why"]
    assert "names no folder" in matched[3]["why"] and "did not write" in matched[4]["why"]
    npu = evidence._match(events[:3], calls, {**REQUEST, "mode": "npu"}, dirs)
    assert [m["call"] for m in npu] == ["output_a", "output_a", "output_b"]  # one compile, cached calls
    nothing = evidence._match(events[2:3], {"output_b": calls["output_b"]}, {**REQUEST, "mode": "npu"}, dirs)
    assert nothing[0]["call"] is None  # no code generation anywhere in the job


def test_call_folders_are_checked_for_what_pypto_writes(tmp_path):
    out = tmp_path / "output"
    real = out / "output_20260101_000000_000001_1_"
    (real / "CostModelSimulationOutput").mkdir(parents=True)
    (real / "CostModelSimulationOutput" / "_simulate.swim.json").write_text("[]")
    (real / "program.json").write_text("{}")
    (real / "kernel_aicpu").mkdir()
    (real / "kernel_aicore").mkdir()
    (real / "kernel_aicpu" / "x.o").write_bytes(Path("/bin/true").read_bytes())
    fake = out / "output_20260101_000000_000002_1_"
    (fake / "CostModelSimulationOutput").mkdir(parents=True)
    (fake / "CostModelSimulationOutput" / "_simulate.swim.json").write_text("[]")
    (out / "output_20260101_000000_000003_1_").symlink_to(real)
    calls = evidence._calls(JobFiles(tmp_path), "sim")
    assert calls == {real.name: {"compiled": True, "cost_model": True},
                     fake.name: {"compiled": False, "cost_model": True}}
    (real / "program.json").unlink()  # on the NPU, code generation alone counts
    assert evidence._calls(JobFiles(tmp_path), "npu")[real.name]["compiled"]
    assert not evidence._calls(JobFiles(tmp_path), "sim")[real.name]["compiled"]


def _checked(events, found, result=None):
    return corroborate.check(False, events, found, result)


def test_contradictions():
    one = [{"index": 0, "kernel": "k", "call": "output_a", "failed": False, "why": ""}]
    forged = one + [{"index": 1, "kernel": "k", "call": None, "failed": False, "why": "names no folder"}]
    integrity_ok = {"event": "integrity", "ok": True, "changed": []}
    result = {"event": "result", "metrics": {"shape_match": True}, "provenance": [{"written": True}]}
    assert _checked([integrity_ok], {"launches": one}).contradictions == []
    assert "not corroborated" in _checked([integrity_ok], {"launches": forged}).contradictions[0]
    only_forged = _checked([integrity_ok], {"launches": forged[1:]})
    assert only_forged.contradictions == [] and only_forged.launches == 0  # not counted: not_run or suspect
    assert "never arrived" in _checked([result], {"launches": one, "recheck": {}}).contradictions[0]
    assert "2 times" in _checked([result, result, integrity_ok], {"launches": one}).contradictions[0]
    changed = {"event": "integrity", "ok": False, "changed": ["runtime.evidence.metrics.compare"]}
    assert "runtime.evidence.metrics.compare" in _checked([changed], {"launches": one}).contradictions[0]
    error = _checked([result, integrity_ok], {"launches": one, "recheck": {"error": "golden 0 changed"}}, result)
    assert "golden 0 changed" in error.contradictions[0] and error.output_written is False
    ours = {"metrics": {"shape_match": True}, "graph_metrics": None,
            "outputs": [{"launch_wrote": False, "changed_after_launch": False}]}
    lied = _checked([result, integrity_ok], {"launches": one, "recheck": ours}, result)
    assert "the dumped bytes say otherwise" in lied.contradictions[0] and lied.output_written is False


# --- the integrity seal --------------------------------------------------------------------------

def test_the_seal_sees_edits_to_the_harness(monkeypatch):
    import pypto.frontend

    integrity.seal()
    assert integrity.check() == {"ok": True, "changed": []}
    monkeypatch.setattr(metrics, "compare", lambda *a, **k: {})
    monkeypatch.setattr(pypto.frontend, "jit", lambda *a, **k: None)
    assert integrity.check()["changed"] == ["pypto.frontend.jit", "runtime.evidence.metrics.compare"]
    monkeypatch.undo()
    original = dumps.sha256.__code__
    try:
        dumps.sha256.__code__ = (lambda t: hashlib.sha256(b"").hexdigest()).__code__
        assert integrity.check()["changed"] == ["runtime.evidence.dumps.sha256"]
    finally:
        dumps.sha256.__code__ = original
    assert integrity.check()["ok"]


def test_job_results_dir_is_writable_by_the_job():
    assert JobDirs(Path("/j")).results in JobDirs(Path("/j")).writable()
    assert os.path.basename(str(JobDirs(Path("/j")).results)) == "results"


def test_a_verify_csv_is_held_against_our_recompute_only_for_an_output_the_graph_wrote():
    from runtime.evidence import verify_recheck

    rows = {0: [{"passName": "tensor_graph", "referPassName": "golden", "ioflag": "output2", "verifyResult": "FAILED",
                 "maxAbsDiff": "78656991835418534559268793208537088.0", "errorCount": "2048",
                 "outputShape": "[32, 64]"}]}
    ours = {"pypto_recompute": [{"max_abs_diff": 5.3e30, "error_count": 2048, "numel": 2048, "shape": [32, 64]}],
            "last_launch": 0, "last_arg": 2}
    # Written by the graph: numbers that differ are a forged CSV.
    assert "recomputed max |diff| 5.3e+30" in verify_recheck.contradictions(rows, [dict(ours, launch_wrote=True)])[0]
    # Never written: both sides read uninitialised memory at different moments (examples/unwritten_output).
    assert verify_recheck.contradictions(rows, [dict(ours, launch_wrote=False)]) == []
