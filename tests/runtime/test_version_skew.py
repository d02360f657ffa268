"""Kernels written for a newer pypto get version_skew, naming what the installed pypto lacks (real pypto).

Our own kernels reproduce the newer APIs of issue 14: `pypto.PrecisionType.INTRINSIC` and
`set_pass_options(vec_nbuffer_setting={"DEFAULT": 2})`. A `-> pypto.Tensor(...)` return annotation is no
skew (issue 31: every pypto from r0.2.0 on refuses it): tests/runtime/test_guide_pitfalls.py.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from runtime.devices import pypto_api
from runtime import verdicts
from runtime.lint import lint_files
from runtime.report import ErrorInfo, LintFinding
from runtime.runner import RunOptions, run_submission
from runtime.judge.skew import detect

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("pypto") is None, reason="pypto is not installed"),
              pytest.mark.slow]  # introspects and compiles with the installed pypto

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNELS = {
    "precision_type": (FIXTURES / "diagnosis" / "pypto-api-missing", "missing_api", "pypto.PrecisionType",
                       "pypto-api-missing"),
    "nbuffer_dict": (FIXTURES / "diagnosis" / "pypto-call-mismatch", "call",
                     "pypto.set_pass_options(vec_nbuffer_setting={'DEFAULT': ...})", "pypto-call-mismatch"),
}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    found = pypto_api.load(tmp_path_factory.mktemp("api-cache"))
    assert found is not None
    return found


def test_api_is_the_installed_pypto_by_introspection(api):
    assert api.version == pypto_api.installed_version()
    assert api.kind("pypto.set_vec_tile_shapes") == "function" and api.kind("pypto.DataType") == "class"
    assert "DT_FP32" in api.classes["pypto.DataType"] and api.kind("pypto.PrecisionType") is None
    params = {p["name"]: p["annotation"] for p in api.signatures["pypto.set_pass_options"]["params"]}
    assert "Dict[int, int]" in params["vec_nbuffer_setting"]


def test_api_is_cached_per_install(tmp_path):
    pypto_api._load.cache_clear()
    first = pypto_api.load(tmp_path)
    cached = list((tmp_path / "pypto-api").glob("*.json"))
    assert first is not None and len(cached) == 1
    data = json.loads(cached[0].read_text())
    data["modules"]["pypto"].append("OnlyInTheCache")  # proves the second load reads the file
    cached[0].write_text(json.dumps(data))
    pypto_api._load.cache_clear()
    second = pypto_api.load(tmp_path)
    assert second is not None and "OnlyInTheCache" in second.modules["pypto"]
    pypto_api._load.cache_clear()


@pytest.mark.parametrize("name", KERNELS)
def test_lint_names_what_the_installed_pypto_lacks(api, name):
    folder, _, subject, rule = KERNELS[name]
    findings = lint_files(sorted(folder.glob("*.py")), folder, api)
    assert any(f.rule == rule and f.subject == subject for f in findings), findings


def test_lint_flags_extra_positional_and_unknown_keyword(api, tmp_path):
    (tmp_path / "k.py").write_text(
        "import pypto\nfrom pypto import NoSuchThing\nimport pypto.nosuchmodule\n\n"
        "def host(x, y):\n    pypto.set_pass_options(no_such_option=1)\n    return pypto.div(x, y, 3)\n")
    found = {(f.rule, f.subject) for f in lint_files([tmp_path / "k.py"], tmp_path, api)}
    assert {("pypto-api-missing", "pypto.NoSuchThing"), ("pypto-api-missing", "pypto.nosuchmodule"),
            ("pypto-call-mismatch", "pypto.set_pass_options(no_such_option=...)"),
            ("pypto-call-mismatch", "pypto.div(... 3 positional arguments)")} <= found


def test_lint_finds_no_skew_in_the_examples(api):
    folders = [p for p in EXAMPLES.iterdir() if p.is_dir()]
    findings = [f for d in folders for f in lint_files(sorted(d.rglob("*.py")), d, api) if f.rule.startswith("pypto-")]
    assert findings == []


def test_without_the_api_the_lint_skips_its_version_checks():
    folder = KERNELS["precision_type"][0]
    assert not [f for f in lint_files(sorted(folder.glob("*.py")), folder) if f.rule == "pypto-api-missing"]


def test_a_lint_finding_on_the_failing_line_explains_an_unrecognised_failure():
    finding = LintFinding("pypto-api-missing", "error", "op_impl.py", 7, "pypto 0.2.0 has no `pypto.Foo`", "",
                          "pypto.Foo")
    error = ErrorInfo("RenderedParserError", "AttributeError: 'Tensor' object has no attribute 'foo'",
                      "op_impl.py", 7)
    skew = detect(error, "", [finding], "0.2.0")
    assert skew is not None and skew.found_by == "lint" and skew.names == ["pypto.Foo"]
    elsewhere = ErrorInfo("RenderedParserError", "AttributeError: 'Tensor' object has no attribute 'foo'",
                          "op_impl.py", 9)
    assert detect(elsewhere, "", [finding], "0.2.0") is None


def test_an_ordinary_failure_is_no_skew():
    error = ErrorInfo("RenderedParserError", "RuntimeError: Errcode: F21004! op [MULS]tile shape not set",
                      "op_impl.py", 12)
    assert detect(error, "", [], "0.2.0") is None


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNELS)
def test_kernel_for_a_newer_pypto_gets_version_skew(warm_sim, tmp_path, name):
    folder, kind, subject, _ = KERNELS[name]
    report = run_submission(folder, RunOptions(cache_dir=tmp_path / "cache", work_dir=tmp_path / "work",
                                               graph_verify=False, timeout_s=60), warm=warm_sim)
    case = report.cases[0]
    assert case.verdict == verdicts.VERSION_SKEW, (case.verdict, case.error)
    assert not verdicts.acceptable(case.verdict, "sim")
    skew = case.version_skew
    assert skew and skew["installed"] == report.environment.pypto and skew["kind"] == kind
    assert subject in skew["names"]
    assert case.verdict_reason.startswith("written for another pypto: the installed pypto")


@pytest.mark.slow
def test_a_script_for_a_newer_pypto_gets_version_skew(warm_sim, tmp_path):
    script = FIXTURES / "version_skew" / "precision_script.py"
    report = run_submission(script, RunOptions(cache_dir=tmp_path / "cache", work_dir=tmp_path / "work",
                                               graph_verify=False, timeout_s=60), warm=warm_sim)
    [case] = report.cases
    assert case.verdict == verdicts.VERSION_SKEW, (case.verdict, case.error)
    assert case.version_skew["names"] == ["pypto.PrecisionType"]


def test_run_refuses_a_pypto_this_host_lacks(tmp_path):
    from runtime.errors import HostError, SubmissionError

    folder = KERNELS["nbuffer_dict"][0]
    with pytest.raises(HostError, match="asks for pypto 9.9.9; this host has pypto"):
        run_submission(folder, RunOptions(work_dir=tmp_path / "a", pypto="9.9.9"))
    spec = json.loads((folder / "test_cases.json").read_text())
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for f in folder.iterdir():
        (pkg / f.name).write_bytes(f.read_bytes())
    (pkg / "test_cases.json").write_text(json.dumps({**spec, "requires_pypto": "9.9.9"}))
    with pytest.raises(HostError, match="asks for pypto 9.9.9"):
        run_submission(pkg, RunOptions(work_dir=tmp_path / "b"))
    with pytest.raises(SubmissionError, match="contradicts test_cases.json's requires_pypto 9.9.9"):
        run_submission(pkg, RunOptions(work_dir=tmp_path / "c", pypto="0.2.0"))


def test_a_dunder_of_pypto_is_no_missing_api(api, tmp_path):
    """`pypto.__path__` is every module's attribute, in every pypto (issue 25: it was flagged as missing)."""
    (tmp_path / "k.py").write_text("import os\nimport pypto\n\ndef host():\n"
                                   "    return open(os.path.join(pypto.__path__[0], 'note.txt'), 'w'), pypto.__version__\n")
    assert [f for f in lint_files([tmp_path / "k.py"], tmp_path, api) if f.rule.startswith("pypto-")] == []


def test_a_permission_error_on_a_flagged_line_is_no_skew():
    """Issue 25: a PermissionError inside a kernel was diagnosed as written for another pypto, because a
    lint finding sat on its line and the case's other output mentioned an ImportError."""
    finding = LintFinding("pypto-api-missing", "error", "op_impl.py", 12, "pypto 0.2.0 has no `pypto.Foo`", "",
                          subject="pypto.Foo")
    noise = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'matplotlib'\n"
    for error in (ErrorInfo("RenderedParserError", "PermissionError: [Errno 13] Permission denied: '/x/note.txt'",
                            "op_impl.py", 12),
                  ErrorInfo("PermissionError", "[Errno 13] Permission denied: '/x/note.txt'", "op_impl.py", 12,
                            traceback="... raise AttributeError in a handler ...\nPermissionError: [Errno 13]")):
        assert detect(error, noise, [finding], "0.2.0") is None
    skewed = ErrorInfo("RenderedParserError", "AttributeError: module 'pypto' has no attribute 'Foo'",
                       "op_impl.py", 12)
    assert detect(skewed, noise, [finding], "0.2.0") is not None
