"""The diagnosis rule base: every rule is proven by a captured text, and the matcher's contract holds.

Texts live in tests/fixtures/diagnosis/texts/<rule-id>[.<variant>].json. "real" ones were captured
from PyPTO 0.2.0 SIM runs of the fixture kernels next to them; "derived" ones are real texts with
one part removed or renamed; "hand-written" ones (NPU-only and exit rules) follow the PyPTO docs,
docs/pypto.md §4 or the harness's exit_info format. The slow test re-runs the fixture kernels for real.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runtime.judge.diagnose import RULES_PATH, SOURCES, STAGES, diagnose, load_rules

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "diagnosis"
TEXTS = FIXTURES / "texts"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
RULES = {rule.id: rule for rule in load_rules()}
TEXT_FILES = sorted(TEXTS.glob("*.json"))
MAX_TEXT_BYTES = 4096


def load_text(path: Path) -> dict:
    return json.loads(path.read_text())


def run(text: dict, **override) -> list:
    stage = override.pop("stage", text["stage"])
    args = {key: text.get(key, "") for key in ("exception", "stdout", "stderr", "plog", "exit_info")}
    args.update(override)
    return diagnose(stage=stage, mode=text["mode"], **args)


def rule_of(path: Path) -> str:
    return path.name.split(".")[0]


# --- every rule is proven by a text -----------------------------------------------------------

@pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: p.stem)
def test_text_yields_its_rule_first(path):
    diagnoses = run(load_text(path))
    assert diagnoses, f"{path.name}: no rule matched"
    assert diagnoses[0].rule == rule_of(path)
    assert [d.rule for d in diagnoses].count(diagnoses[0].rule) == 1  # deduplicated


def test_every_rule_has_a_text():
    assert set(RULES) - {rule_of(p) for p in TEXT_FILES} == set()
    assert {rule_of(p) for p in TEXT_FILES} - set(RULES) == set()


@pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: p.stem)
def test_text_fixture_is_small_and_labelled(path):
    assert path.stat().st_size <= MAX_TEXT_BYTES
    text = load_text(path)
    assert text["provenance"] in ("real", "derived", "hand-written") and text["source"]
    assert text["stage"] in STAGES and text["mode"] in ("sim", "npu")


def test_rules_reproducible_in_sim_are_proven_by_real_output():
    """A rule with a fixture kernel must have a text captured from that kernel, not a guess."""
    real = {rule_of(p) for p in TEXT_FILES if load_text(p)["provenance"] == "real"}
    harness_worded = {"golden-non-finite"}  # the message is our runner's, not pypto's
    assert {entry["rule"] for entry in MANIFEST.values()} - real - harness_worded == set()


# --- ordering: noise and fallbacks -----------------------------------------------------------

NOISE_TEXTS = [p for p in TEXT_FILES if rule_of(p).startswith("noise-")]
REAL_TEXTS = [p for p in TEXT_FILES if not rule_of(p).startswith("noise-") and load_text(p)["provenance"] == "real"]


@pytest.mark.parametrize("path", REAL_TEXTS, ids=lambda p: p.stem)
def test_noise_never_comes_first(path):
    text = load_text(path)
    for noise_path in NOISE_TEXTS:
        noise = load_text(noise_path)
        mixed = {key: "\n".join(filter(None, (text.get(key, ""), noise.get(key, ""))))
                 for key in ("exception", "stdout", "stderr", "plog")}
        rules = [d.rule for d in run(text, **mixed)]
        assert rules[0] == rule_of(path)
        assert rule_of(noise_path) in rules
        noisy = [r.startswith("noise-") for r in rules]
        assert noisy == sorted(noisy), f"noise must come last: {rules}"


def test_noise_alone_is_reported_flagged_without_location():
    text = load_text(TEXTS / "noise-graph-verify-index.json")
    diagnoses = run(text)
    assert [d.rule for d in diagnoses] == ["noise-graph-verify-index"]
    assert all(RULES[d.rule].noise for d in diagnoses)
    assert diagnoses[0].file == "" and diagnoses[0].line == 0


def test_fallbacks_only_when_nothing_specific_matched():
    l0a = load_text(TEXTS / "tile-exceeds-l0a.json")
    assert [d.rule for d in run(l0a)] == ["tile-exceeds-l0a"]  # not pass-failed / pypto-error-code
    without_plog = [d.rule for d in run(l0a, plog="")]
    assert without_plog[0] == "pass-failed" and all(RULES[r].fallback for r in without_plog)


def test_specific_signature_outranks_the_crash_it_caused():
    rules = [d.rule for d in run(load_text(TEXTS / "loop-idx-name-duplicate.json"))]
    assert rules == ["loop-idx-name-duplicate", "crash-segfault"]


# --- sim_only -------------------------------------------------------------------------------------

def test_kernel_bugs_seen_in_sim_are_not_sim_only():
    assert RULES["cube-tile-not-set"].sim_only is False  # FC4000 kL0=0
    assert RULES["matmul-dynamic-dim"].sim_only is False  # FC3000 dim[0] = -1
    assert not any(rule.sim_only for rule in RULES.values() if rule.modes == ("npu",))


def test_cpu_host_artefacts_are_sim_only():
    for rule_id in ("not-npu-device", "ascend-home-on-cpu-host", "torch-npu-missing", "torch-npu-api-on-cpu-host"):
        assert RULES[rule_id].sim_only is True


def test_diagnosis_carries_the_rule_fields():
    text = load_text(TEXTS / "cube-tile-not-set.json")
    first = run(text)[0]
    rule = RULES["cube-tile-not-set"]
    assert (first.cause, first.fix, first.sim_only, first.stage) == (rule.cause, rule.fix, False, "sim")


# --- evidence and location -------------------------------------------------------------------------

def test_evidence_is_one_clean_line():
    for path in TEXT_FILES:
        for diag in run(load_text(path)):
            assert "\n" not in diag.evidence and "\x1b" not in diag.evidence
            assert 0 < len(diag.evidence) <= 300 and diag.origin in SOURCES


def test_evidence_skips_source_lines_echoed_by_the_traceback():
    # The traceback shows pypto's `raise ValueError("Invalid value type")` before the error itself.
    first = run(load_text(TEXTS / "loop-bound-type.json"))[0]
    assert (first.evidence, first.origin) == ("ValueError: Invalid value type", "exception")


def test_evidence_from_plog_names_the_buffer():
    first = run(load_text(TEXTS / "tile-exceeds-ub.json"))[0]
    assert first.origin == "plog" and "exceeds MEM_UB size [196608]" in first.evidence


def test_location_from_pypto_diagnostic():
    first = run(load_text(TEXTS / "vec-tile-shape-not-set.json"))[0]
    assert first.file.endswith("vec-tile-shape-not-set/vec_tile_shape_not_set_impl.py")
    assert first.line == 10  # the `out[:] = x + 1.0` line, not the wrapper's call


def test_location_from_deepest_user_frame():
    # Compile-time failures only print "INTERNAL BUG <file>:1:0"; the traceback gives the call site.
    first = run(load_text(TEXTS / "view-offsets-rank.json"))[0]
    assert first.file.endswith("view_offsets_rank_impl.py") and first.line == 18
    traceback = textwrap.dedent("""\
        Traceback (most recent call last):
          File "/srv/job/harness.py", line 3, in <module>
          File "/srv/job/sub/op_impl.py", line 21, in op_wrapper
            kernel(x, out)
          File "/opt/py/lib/python3.11/site-packages/pypto/frontend/parser/entry.py", line 342, in __call__
          File "/opt/py/lib/python3.11/contextlib.py", line 137, in __enter__
        RuntimeError: not all tensors are contiguous
        """)
    first = diagnose(stage="sim", mode="sim", exception=traceback)[0]
    assert (first.rule, first.file, first.line) == ("non-contiguous-tensor", "/srv/job/sub/op_impl.py", 21)


# --- filters and arguments --------------------------------------------------------------------------

def test_stage_and_mode_filters():
    golden = load_text(TEXTS / "golden-raised.json")
    assert "golden-raised" not in [d.rule for d in run(golden, stage="sim")]
    npu = load_text(TEXTS / "npu-out-of-memory.json")
    assert diagnose(stage="npu", mode="sim", exception=npu["exception"]) == []


def test_unknown_stage_or_mode_is_an_error():
    with pytest.raises(ValueError, match="stage"):
        diagnose(stage="compile", mode="sim")
    with pytest.raises(ValueError, match="mode"):
        diagnose(stage="sim", mode="gpu")


def test_nothing_matches_nothing():
    assert diagnose(stage="sim", mode="sim") == []
    assert diagnose(stage="sim", mode="sim", exception="AssertionError: precision", exit_info="") == []


# --- the rule file ----------------------------------------------------------------------------------

GOOD_RULE = """
[[rule]]
id = "{id}"
title = "t"
match = ['{regex}']
cause = "c"
fix = "f"
sim_only = false
priority = 1
"""


def write_rules(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(body)
    return path


def test_packaged_rules_load():
    assert load_rules(RULES_PATH) == load_rules()
    assert len(RULES) == len(load_rules())


@pytest.mark.parametrize(("body", "message"), [
    (GOOD_RULE.format(id="dup-rule", regex="a") + GOOD_RULE.format(id="dup-rule", regex="b"), "'dup-rule': duplicate id"),
    (GOOD_RULE.format(id="bad-regex", regex="unclosed (group"), "'bad-regex': bad regex"),
    (GOOD_RULE.format(id="no-fix", regex="a").replace('fix = "f"\n', ""), "'no-fix': missing required keys ['fix']"),
    (GOOD_RULE.format(id="typo-key", regex="a") + 'sourcse = ["plog"]\n', "'typo-key': unknown keys ['sourcse']"),
    (GOOD_RULE.format(id="bad-source", regex="a") + 'sources = ["logs"]\n', "'bad-source': sources has unknown values"),
    (GOOD_RULE.format(id="Not_Kebab", regex="a"), "'Not_Kebab': id must be kebab-case"),
    (GOOD_RULE.format(id="quiet", regex="a") + "noise = true\n", "'quiet': noise rules"),
    (GOOD_RULE.format(id="str-flag", regex="a").replace("sim_only = false", 'sim_only = "no"'), "'str-flag': sim_only"),
])
def test_load_rules_rejects_bad_rules(tmp_path, body, message):
    with pytest.raises(ValueError) as info:
        load_rules(write_rules(tmp_path, body))
    assert message in str(info.value)


def test_custom_rules_are_used(tmp_path):
    rules = load_rules(write_rules(tmp_path, GOOD_RULE.format(id="my-rule", regex="boom")))
    diagnoses = diagnose(stage="sim", mode="sim", stderr="x\nboom here\ny", rules=rules)
    assert [(d.rule, d.evidence, d.origin) for d in diagnoses] == [("my-rule", "boom here", "stderr")]


# --- fixture packages ---------------------------------------------------------------------------------

def test_manifest_matches_fixture_packages():
    dirs = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "texts"}
    assert dirs == set(MANIFEST)
    for name, entry in MANIFEST.items():
        assert entry["rule"] in RULES and entry["stage"] in STAGES
        spec = json.loads((FIXTURES / name / "test_cases.json").read_text())
        op = spec["op_name"]
        assert (FIXTURES / name / f"{op}_impl.py").is_file() and (FIXTURES / name / f"{op}_golden.py").is_file()
        assert spec["test_cases"] and spec["test_cases"][0]["id"]


# --- slow: the fixture kernels, run with real PyPTO in SIM ---------------------------------------------

CHILD = textwrap.dedent("""\
    import importlib, json, pathlib, sys, traceback
    pkg, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    res = {"phase": "import", "exception": ""}
    try:
        import torch
        spec = json.loads((pkg / "test_cases.json").read_text())
        name, case = spec["op_name"], spec["test_cases"][0]
        sys.path.insert(0, str(pkg))
        impl = importlib.import_module(name + "_impl")
        golden = importlib.import_module(name + "_golden")
        torch.manual_seed(case["seed"])
        inputs = [torch.randn(d["shape"], dtype=getattr(torch, d["dtype"])) for d in case.get("inputs") or [case["input"]]]
        res["phase"] = "golden"
        expected = getattr(golden, name + "_golden")(*inputs)
        if not torch.isfinite(expected).all():
            raise ValueError(f"the golden returned {int((~torch.isfinite(expected)).sum())} non-finite value(s) in output 0")
        res["phase"] = "sim"
        getattr(impl, name + "_wrapper")(*inputs)
        res["phase"] = "done"
    except BaseException:
        res["exception"] = traceback.format_exc()
    out.write_text(json.dumps(res))
    """)


def run_fixture(name: str, workdir: Path) -> tuple[str, list[str], str]:
    entry = MANIFEST[name]
    job = workdir / name
    for sub in ("out", "log", "home"):
        (job / sub).mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(job / "home"), "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "TILE_FWK_OUTPUT_DIR": str(job / "out"),
           "ASCEND_PROCESS_LOG_PATH": str(job / "log"), **entry.get("env", {})}
    timeout_s = entry.get("timeout_s", 120)
    with open(job / "stdout", "w") as out, open(job / "stderr", "w") as err:
        proc = subprocess.Popen([sys.executable, str(workdir / "child.py"), str(FIXTURES / name), str(job / "res.json")],
                                stdout=out, stderr=err, env=env, cwd=job, start_new_session=True)
        try:
            code = proc.wait(timeout_s)
            exit_info = "" if code == 0 else (f"exit code {code}" if code > 0
                                              else f"signal {-code} ({signal.Signals(-code).name})")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            exit_info = f"timeout after {timeout_s} s"
    res = json.loads((job / "res.json").read_text()) if (job / "res.json").exists() else {"phase": "sim", "exception": ""}
    plog = "".join(p.read_text(errors="replace") for p in sorted((job / "log").glob("debug/plog/*.log")))
    stage = "golden" if res["phase"] == "golden" else entry["stage"]
    found = diagnose(stage=stage, mode=entry["mode"], exception=res["exception"], plog=plog, exit_info=exit_info,
                     stdout=(job / "stdout").read_text(errors="replace"),
                     stderr=(job / "stderr").read_text(errors="replace"))
    return name, [d.rule for d in found], stage


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("pypto") is None, reason="pypto is not installed")
def test_fixture_kernels_reproduce_their_rule(tmp_path):
    (tmp_path / "child.py").write_text(CHILD)
    # Graph-verify fixtures need the calculator (a minute to build per process); they are covered
    # by their captured texts. Fixtures the real runtime runs are checked there
    # (test_diagnosis_runtime.py); here, in a cold process, the ones it cannot run.
    from tests.runtime.test_diagnosis_runtime import NAMES as UNDER_RUNTIME

    names = [n for n, e in MANIFEST.items() if e["stage"] != "graph_verify" and n not in UNDER_RUNTIME]
    assert names, "every fixture the runtime cannot run still needs a cold run here"
    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
        results = list(pool.map(lambda n: run_fixture(n, tmp_path), names))
    wrong = [(name, rules) for name, rules, _ in results if not rules or rules[0] != MANIFEST[name]["rule"]]
    assert wrong == []


def test_an_exit_code_fallback_is_not_offered_when_a_python_exception_ended_the_process():
    exited = diagnose(stage="sim", mode="sim", exit_info="exit code 1")
    assert [d.rule for d in exited] == ["process-exit-nonzero"]
    raised = diagnose(stage="sim", mode="sim", exit_info="exit code 1",
                      exception="AssertionError: Not equal to tolerance rtol=0.001, atol=0.001")
    assert "process-exit-nonzero" not in [d.rule for d in raised]
