"""Test modules run the way pytest runs them, and every test file under tests/ops/ an operator
(docs/realops.md §4, §5). Each test builds its own gym-style checkout: our own kernels, conftests and tests."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.intake import discover, submission
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

KERNEL = '''
import pypto
import torch


@pypto.frontend.jit
def scale_kernel(x: pypto.Tensor([16, 32], pypto.DT_FP32), out: pypto.Tensor([16, 32], pypto.DT_FP32),
                 factor: float):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x * factor


def scale_wrapper(x, factor):
    out = torch.zeros_like(x)
    scale_kernel(x, out, factor)
    return out
'''

# The root conftest: the card from the environment, and a collection hook asking torch_npu for the SoC, as
# a gym's root conftest does; items marked for another SoC are left out.
ROOT_CONFTEST = '''
import os

import pytest


@pytest.fixture
def device():
    return int(os.environ.get("TILE_FWK_DEVICE_ID", 0))


def pytest_collection_modifyitems(config, items):
    import torch_npu
    soc = torch_npu.npu.get_soc_version()
    items[:] = [i for i in items if i.get_closest_marker("soc") is None
                or soc in i.get_closest_marker("soc").args]
'''

# The model folder's conftest: a fixture built on the root's `device`, and one only an NPU can give.
FOLDER_CONFTEST = '''
import os

import pytest
import torch
import torch_npu


@pytest.fixture
def npu_device(device):
    torch.npu.set_device(device)
    os.environ["TILE_FWK_DEVICE_ID"] = str(device)
    return f"npu:{device}"


@pytest.fixture
def captured_graph(npu_device):
    return torch.npu.NPUGraph()
'''

MODULE = '''
import json
import sys
from pathlib import Path

import pytest
import torch
from numpy.testing import assert_allclose

_HERE = Path(__file__).parent
sys.path.insert(0, str(_HERE.parent.parent.parent / "src" / "mygym" / "ops" / "pypto_tensor"))

CASES = json.loads((_HERE / "test_cases.json").read_text())["test_cases"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_scale(case, npu_device):
    from toy_model.scale.scale_impl import scale_wrapper

    x = torch.randn(16, 32, device=npu_device)
    out = scale_wrapper(x, case["factor"])
    assert_allclose(out.cpu().numpy(), (x.cpu() * case["expect"]).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.skip(reason="fp8 not yet")
def test_scale_fp8(npu_device):
    raise AssertionError("never runs")


@pytest.mark.soc(999)
def test_other_chip(npu_device):
    raise AssertionError("left out by the root conftest's SoC filter")


def test_replay(captured_graph):
    raise AssertionError("its fixture needs an NPU")
'''

CASES = {"test_cases": [{"id": "double", "factor": 2.0, "expect": 2.0},
                        {"id": "half_wrong", "factor": 0.5, "expect": 0.25}]}


def gym_checkout(root: Path) -> Path:
    """A checkout in the gym's newer layout: kernels under src/…/pypto_tensor/, conftests at the root and in
    the model folder, pytest's config in pyproject.toml (its addopts name a plugin the job lacks)."""
    kernel = root / "src/mygym/ops/pypto_tensor/toy_model/scale/scale_impl.py"
    kernel.parent.mkdir(parents=True)
    for package in (kernel.parent, kernel.parent.parent):
        (package / "__init__.py").write_text("")
    kernel.write_text(KERNEL)
    (root / "conftest.py").write_text(ROOT_CONFTEST)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-n 4"\nmarkers = ["soc: chips"]\n')
    folder = root / "tests/ops/toy_model"
    folder.mkdir(parents=True)
    (folder / "conftest.py").write_text(FOLDER_CONFTEST)
    (folder / "test_cases.json").write_text(json.dumps(CASES))
    (folder / "test_scale.py").write_text(MODULE)
    return root


def test_a_module_with_folder_fixtures_runs_each_pytest_item_as_its_own_case(warm_sim, calculator_cache, tmp_path):
    """The gym's Qwen3.5 gated_delta_rule: `npu_device` from the folder's conftest, built on the root's `device`;
    it was `not_run` "needs an argument 'npu_device'", exit 2 (issue 32)."""
    root = gym_checkout(tmp_path / "gym")
    [op] = discover.discover(root)
    assert (op.name, op.route, op.entry) == ("scale", "module", "tests/ops/toy_model/test_scale.py")
    assert {"conftest.py", "pyproject.toml", "tests/ops/toy_model/conftest.py"} <= set(op.files)
    sub = submission.load_operator(root, op)
    report = run_submission(root, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim,
                            loaded=sub)
    assert report.submission.cases_from == "pytest items"
    got = {c.case: c for c in report.cases}
    assert list(got) == ["test_scale[double]", "test_scale[half_wrong]", "test_scale_fp8", "test_replay",
                         "test_other_chip"]
    double, wrong = got["test_scale[double]"], got["test_scale[half_wrong]"]
    assert double.verdict == "sim_garbage_graph_ok", (double.verdict_reason, double.error)
    assert wrong.verdict == "graph_fail" and wrong.kernel_launches == 1, (wrong.verdict_reason, wrong.error)
    skipped = got["test_scale_fp8"]
    assert (skipped.verdict, skipped.stage, skipped.launches) == ("not_run", "skipped", [])
    assert "fp8 not yet" in skipped.verdict_reason
    left_out = got["test_other_chip"]  # the root conftest's SoC filter: said, not dropped
    assert (left_out.verdict, left_out.stage) == ("not_run", "skipped") and "conftest" in left_out.verdict_reason
    replay = got["test_replay"]
    assert (replay.verdict, replay.stage) == ("not_run", "environment"), (replay.verdict_reason, replay.error)
    assert "'captured_graph'" in replay.verdict_reason and "conftest.py" in replay.verdict_reason
    assert replay.diagnosis[0].rule == "fixture-needs-npu"
    assert exit_codes.of_case(replay.verdict, "sim", replay.stage) == exit_codes.INFRA
    # Named with --case, a marked item runs (its own AssertionError, no kernel).
    asked = run_submission(root, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w2",
                                            cases=["test_scale_fp8"]), warm=warm_sim, loaded=sub).cases
    assert [c.case for c in asked] == ["test_scale_fp8"] and "never runs" in asked[0].error.message


LONE_MODEL = '''
import pypto
import pytest
import torch
import torch_npu
from numpy.testing import assert_allclose


@pypto.frontend.jit
def add_bias(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32), bias: float):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x + bias


@pytest.mark.parametrize("rows, bias, expect", [(16, 1.0, 1.0), (32, 2.0, 3.0), (48, 0.5, 0.5)])
def test_add_bias(rows, bias, expect):
    x = torch.randn(rows, 32).npu()
    out = torch.zeros(rows, 32).npu()
    add_bias(x, out, bias)
    assert_allclose(out.cpu().numpy(), (x.cpu() + expect).numpy(), rtol=1e-6, atol=1e-6)


def test_returns_false():
    return False


def test_level1(case, run_mode, device_id, device):
    # the fixtures crosscheck supplies when the checkout defines none (no kernel: not_run, no_kernel)
    assert (case, run_mode, device_id, device) == ({"id": "level1", "seed": 4}, "sim", 0, "npu:0")


if __name__ == "__main__":
    test_add_bias(16, 1.0, 1.0)
'''


def test_every_case_of_a_multi_case_model_script_runs_with_its_own_verdict(warm_sim, calculator_cache, tmp_path):
    """pypto's models/ scripts (`@pytest.mark.parametrize` over shapes, `__main__` calling the first): the sets
    ran in one case, the first failure ending it; each is now a case with its own verdict."""
    path = tmp_path / "model_add_bias.py"
    path.write_text(LONE_MODEL)
    (tmp_path / "test_cases.json").write_text('{"test_cases": [{"id": "a"}, {"id": "level1", "seed": 4}]}')
    report = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    assert [(c.case, c.verdict) for c in report.cases] == [
        ("test_add_bias[16-1.0-1.0]", "sim_garbage_graph_ok"), ("test_add_bias[32-2.0-3.0]", "graph_fail"),
        ("test_add_bias[48-0.5-0.5]", "sim_garbage_graph_ok"), ("test_returns_false", "structural_error"),
        ("test_level1", "not_run")], \
        [(c.case, c.verdict, c.error) for c in report.cases]
    assert report.cases[3].error.type == "TestFailed"  # returned False: the gym's way of failing
    assert report.cases[4].stage == "no_kernel", report.cases[4].error


SCRIPT = '''
import argparse
import json
import os

CASES = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_cases.json")))["test_cases"]
parser = argparse.ArgumentParser()
parser.add_argument("case_id", nargs="?")
parser.add_argument("--list", action="store_true")
args = parser.parse_args()
if args.list:
    for c in CASES:
        if c["op_name"] == "{op}":
            print("  " + c["id"] + "  -- a case")
'''


def test_every_test_file_under_tests_ops_is_an_operator_named_after_what_it_tests(tmp_path, capsys):
    """Gemma-4's model folder holds two test scripts sharing one test_cases.json: one operator named after the
    model was listed, for the first file only. Both gym layouts; a kernel-named folder keeps its name."""
    from runtime.cli.cli import main as cli_main

    root = gym_checkout(tmp_path / "gym")
    tile = root / "src/mygym/ops/pypto_tile/vector/axpy/axpy_impl.py"
    tile.parent.mkdir(parents=True)
    tile.write_text(KERNEL)
    (root / "tests/ops/vector/Axpy").mkdir(parents=True)
    (root / "tests/ops/vector/Axpy/test_axpy.py").write_text(SCRIPT.replace("{op}", "axpy"))
    model = root / "tests/ops/big_model"
    model.mkdir()
    (model / "test_cases.json").write_text(json.dumps({"test_cases": [
        {"op_name": "attn_softmax", "id": "s1"}, {"op_name": "attn_softmax", "id": "s128"},
        {"op_name": "decode_attn", "id": "d64"}]}))
    for op in ("attn_softmax", "decode_attn"):
        (model / f"test_{op}.py").write_text(SCRIPT.replace("{op}", op))
    other = root / "tests/ops/small_model"  # no test_cases.json, no kernel folder of its name
    other.mkdir()
    (other / "test_attn_softmax.py").write_text(SCRIPT.replace("{op}", "attn_softmax"))
    found = {op.name: op for op in discover.discover(root)}
    # Axpy's folder is named like its kernel: its name as before; toy_model's one test: named after what it tests.
    assert sorted(found) == ["Axpy", "big_model.attn_softmax", "decode_attn", "scale", "small_model.attn_softmax"], \
        sorted(found)
    assert found["big_model.attn_softmax"].cases == ["s1", "s128"] and found["decode_attn"].cases == ["d64"]
    assert found["decode_attn"].entry == "tests/ops/big_model/test_decode_attn.py"
    assert all(op.route != "none" for op in found.values()), [(op.name, op.problem) for op in found.values()]
    # `--op` finds the operators of a model folder by its name, and one by what it tests.
    assert [op.name for op in discover.discover(root, ["big_model"])] == ["big_model.attn_softmax", "decode_attn"]
    assert len(discover.discover(root, ["attn_softmax"])) == 2
    from runtime.cli.cli_checkout import operators_of_test_folder

    assert [op.name for op in operators_of_test_folder(model)[1]] == ["big_model.attn_softmax", "decode_attn"]
    assert cli_main(["run", str(root), "--list"]) == 0
    listed = capsys.readouterr().out
    assert "tests/ops/big_model/test_decode_attn.py" in listed
    assert "tests/ops/small_model/test_attn_softmax.py" in listed
    assert "scale                    module      4+  tests/ops/toy_model/test_scale.py" in listed


def test_a_module_pytest_skips_whole_is_reported_with_pytests_reason(warm_sim, tmp_path):
    path = tmp_path / "test_needs_extra.py"
    path.write_text("import pytest\n\npytest.importorskip('no_such_package_here')\n\n\ndef test_a():\n    pass\n")
    report = run_submission(path, RunOptions(work_dir=tmp_path / "w", graph_verify=False), warm=warm_sim)
    assert [(c.case, c.verdict, c.stage) for c in report.cases] == [("test_a", "not_run", "skipped")]
    assert "no_such_package_here" in report.cases[0].verdict_reason
