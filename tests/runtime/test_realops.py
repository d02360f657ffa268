"""Real operators unchanged (docs/realops.md): the torch_npu stand-in, test files inside a checkout, and
graph verify judged by a script's own asserts. Real pypto throughout."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime.intake import submission
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow  # runs real pypto compiles

REPO = Path(__file__).resolve().parents[2]
GYM = EXAMPLES / "gym-checkout"
AXPY = GYM / "tests/ops/vector/Axpy/test_axpy.py"


def in_fresh_python(code: str) -> subprocess.CompletedProcess[str]:
    """The stand-in changes torch for the whole process: try it in a process of its own."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)


def test_standin_maps_npu_devices_to_the_cpu_and_copies_on_the_way():
    proc = in_fresh_python("""
        from runtime.devices import standin
        assert standin.offer() and not standin.used()
        import torch, torch_npu
        assert standin.used()
        torch.npu.set_device(1); assert torch.npu.current_device() == 1
        torch.npu.set_device(torch.device("npu", 2)); assert torch.npu.current_device() == 2
        assert torch.npu.is_available() and torch.npu.device_count() == 1
        torch.npu.synchronize()
        x = torch.randn(4, device="npu:0")
        y = torch.zeros(2, device=torch.device("npu", 0))
        z = x.to("npu:0"); w = x.npu()
        print(x.device, y.device, z.device, z is x, w is x, torch.equal(z, x), str(torch.device("npu", 3)))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["cpu", "cpu", "cpu", "False", "False", "True", "npu:3"]


def test_standin_fused_op_fails_with_one_line_naming_the_call():
    proc = in_fresh_python("""
        from runtime.devices import standin
        standin.offer()
        import torch, torch_npu
        from torch_npu import npu_fused_infer_attention_score
        npu_fused_infer_attention_score(torch.ones(2), torch.ones(2))
    """)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("torch_npu.NeedsRealNpu: torch_npu.npu_fused_infer_attention_score() needs a real NPU"), last


def test_npu_mode_refuses_the_standin():
    proc = in_fresh_python("""
        import sys
        from runtime.devices import device, standin
        standin.offer()
        try:
            device.load_torch_npu()
        except RuntimeError as exc:
            print("refused:", exc)
    """)
    assert "refused:" in proc.stdout and "stand-in" in proc.stdout, proc.stdout + proc.stderr


def test_a_test_file_in_a_checkout_takes_what_it_imports_and_nothing_else():
    sub = submission.load(AXPY, Path("/nonexistent"))
    assert sub.root == GYM.resolve() and sub.script == "tests/ops/vector/Axpy/test_axpy.py"
    assert sub.files == [
        "src/pypto_gym/ops/pypto_tile/common/__init__.py",
        "src/pypto_gym/ops/pypto_tile/common/tiling.py",
        "src/pypto_gym/ops/pypto_tile/vector/axpy/axpy_impl.py",
        "tests/ops/vector/Axpy/axpy_golden.py",
        "tests/ops/vector/Axpy/test_axpy.py",
        "tests/ops/vector/Axpy/test_cases.json",
    ]


SCALE_SHIFT = GYM / "tests/ops/vector/ScaleShift/test_scale_shift.py"


def test_a_literal_import_module_is_followed_and_a_script_without_run_mode_is_not_given_one():
    sub = submission.load(SCALE_SHIFT, Path("/nonexistent"))
    assert "src/pypto_gym/ops/pypto_tile/vector/scale_shift/scale_shift_impl.py" in sub.files
    assert "tests/ops/vector/ScaleShift/scale_shift_golden.py" in sub.files
    from runtime.intake import testmodule

    assert testmodule.run_mode_args(SCALE_SHIFT, "sim") == [] and testmodule.run_mode_args(AXPY, "sim")


def test_npu_first_script_runs_unchanged_and_its_asserts_judge_the_graph(warm_sim, calculator_cache, tmp_path):
    report = run_submission(AXPY, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path), warm=warm_sim)
    assert [c.case for c in report.cases] == ["axpy_small", "axpy_wide"]  # ids from the gym-style --list
    assert report.submission.cases_from == "--list"
    assert report.environment.torch_npu and "stand-in" in report.environment.torch_npu
    for case in report.cases:
        assert case.verdict == "sim_garbage_graph_ok", (case.verdict_reason, case.error)
        gv = case.graph_verify
        assert gv["status"] == "pass" and gv["asserts_judged"] == 1 and gv["metrics"]["max_abs_diff"] == 0
        garbage = gv["asserts"][0]["sim_garbage"]
        assert garbage["mismatch_count"] > 0  # what plain SIM left in the output
        assert case.kernel_launches == 1 and case.cost_model and case.cost_model.aicore_time_us > 0


WRONG = '''
import sys
import pypto
import torch
from numpy.testing import assert_allclose


@pypto.frontend.jit
def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x + {added}


if __name__ == "__main__":
    x = torch.randn(16, 32)
    out = torch.zeros_like(x)
    k(x, out)
    assert_allclose(out.numpy(), (x + 1.0).numpy(), rtol=1e-5, atol=1e-5)
'''


@pytest.mark.parametrize("added,verdict,status", [("1.0", "sim_garbage_graph_ok", "pass"),
                                                  ("2.0", "graph_fail", "fail")])
def test_script_graph_verdicts(warm_sim, calculator_cache, tmp_path, added, verdict, status):
    path = tmp_path / "plus_one.py"
    path.write_text(WRONG.replace("{added}", added))
    report = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    case = report.cases[0]
    assert (case.verdict, case.graph_verify["status"]) == (verdict, status), case.verdict_reason
    assert report.environment.torch_npu is None  # never imported: not claimed


OWN_CHECK = {  # a wrong kernel (x + 2), judged by checks the harness cannot read (gym ApplyRMSProp's shape)
    "bare-assert": "assert float((out - (x + 1.0)).abs().max()) < 1e-5, 'out mismatch'",
    "own-raise": "if float((out - (x + 1.0)).abs().max()) >= 1e-5:\n        raise ValueError('out mismatch')",
    # an assert on something other than values (the stand-in's tensors are on the CPU): no word on the maths
    "device-assert": "assert out.device.type == 'npu', 'run me on an NPU'",
    # gym GatherPaKvCache: torch.equal, then [PRECISION_FAIL] through logging (stderr) and exit 1
    "fail-marker": "import logging\n    if not torch.equal(out, x + 1.0):\n"
                   "        logging.getLogger('t').error('[PRECISION_FAIL]')\n        sys.exit(1)",
}


@pytest.mark.parametrize("check,verdict,status", [("bare-assert", "graph_fail", "fail"),
                                                  ("own-raise", "structural_error", "unavailable"),
                                                  ("device-assert", "structural_error", "unavailable"),
                                                  ("fail-marker", "graph_fail", "fail")])
def test_a_check_of_the_tests_own_on_the_graph_result(warm_sim, calculator_cache, tmp_path, check, verdict, status):
    path = tmp_path / "plus_one.py"
    path.write_text(WRONG.replace("{added}", "2.0").replace(
        "assert_allclose(out.numpy(), (x + 1.0).numpy(), rtol=1e-5, atol=1e-5)", OWN_CHECK[check]))
    report = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    case = report.cases[0]
    assert (case.verdict, case.graph_verify["status"]) == (verdict, status), case.verdict_reason
    assert case.graph_verify["own_check"]
    assert ("plus_one.py:" if check != "fail-marker" else "[PRECISION_FAIL]") in case.graph_verify["reason"]
    assert verdict == "graph_fail" or "cannot tell" in case.verdict_reason


ROW_SQUARE_MEAN = GYM / "tests/ops/vector/RowSquareMean/test_row_square_mean.py"


def test_npu_only_test_module_runs_each_test_function_as_a_case(warm_sim, calculator_cache, tmp_path):
    report = run_submission(ROW_SQUARE_MEAN, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path), warm=warm_sim)
    assert [c.case for c in report.cases] == ["test_level0", "test_level1"]
    assert report.submission.cases_from == "pytest items"
    for case in report.cases:
        assert case.verdict == "sim_garbage_graph_ok", (case.verdict_reason, case.error)
        assert case.graph_verify["asserts_judged"] == 1 and case.script["exit_code"] == 0


MODULE = '''
import pypto
import torch
import torch_npu
from numpy.testing import assert_allclose


@pypto.frontend.jit
def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x * 3.0


def test_triple(device, run_mode):
    torch.npu.set_device(device)
    x = torch.randn(16, 32).to(device)
    out = torch.zeros(16, 32, device=device)
    k(x, out)
    torch.npu.synchronize()
    try:
        assert_allclose(out.cpu().numpy(), (x.cpu() * 2).numpy(), rtol=1e-5, atol=1e-5)
    except AssertionError:
        return False
    return run_mode == "sim"


def test_needs_what_we_cannot_give(tokenizer):
    pass
'''


def test_module_graph_fail_and_an_argument_we_cannot_supply(warm_sim, calculator_cache, tmp_path):
    path = tmp_path / "test_triple.py"
    path.write_text(MODULE)
    report = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    triple, needs = report.cases
    assert triple.case == "test_triple" and triple.verdict == "graph_fail", triple.verdict_reason
    assert triple.graph_verify["asserts_failed"] == 1
    assert needs.verdict == "not_run" and "needs the fixture 'tokenizer'" in needs.error.message
    assert needs.stage == "arguments"  # never a kernel defect: unusable input (runtime/exit_codes.py)


GYM_STYLE_MODULE = '''
import pypto
import pytest
import torch
import torch_npu
from numpy.testing import assert_allclose


@pypto.frontend.jit
def halve(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x * 0.5


def check(device_id, factor):
    torch.npu.set_device(device_id)
    x = torch.randn(16, 32, device=f"npu:{device_id}")
    out = torch.zeros(16, 32, device=f"npu:{device_id}")
    halve(x, out)
    assert_allclose(out.cpu().numpy(), (x.cpu() * factor).numpy(), rtol=1e-6, atol=1e-6)


def test_halve(device_id):
    check(device_id, 0.5)


@pytest.mark.skip(reason="odd rows not supported yet")
def test_halve_odd_rows(device_id):
    check(device_id, 0.25)
'''


def test_module_gets_device_id_and_a_function_marked_skip_is_reported_not_run(warm_sim, calculator_cache, tmp_path):
    """The gym's `test_fwd(device_id)` and the models' `@pytest.mark.skip(reason=...)` cases (docs/realops.md §10)."""
    from runtime import exit_codes

    path = tmp_path / "test_halve.py"
    path.write_text(GYM_STYLE_MODULE)
    report = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    halve, odd = report.cases
    assert halve.case == "test_halve" and halve.verdict == "sim_garbage_graph_ok", (halve.verdict_reason, halve.error)
    assert (odd.verdict, odd.stage, odd.launches) == ("not_run", "skipped", [])
    assert "odd rows not supported yet" in odd.verdict_reason
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK
    # Named with --case it runs, and its wrong factor is found.
    asked = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w2",
                                            cases=["test_halve_odd_rows"]), warm=warm_sim).cases
    assert [(c.case, c.verdict) for c in asked] == [("test_halve_odd_rows", "graph_fail")]


PARAMETRIZED_MODULE = '''
from dataclasses import dataclass

import pypto
import pytest
import torch
import torch_npu
from numpy.testing import assert_allclose


@dataclass(frozen=True)
class ScaleCase:
    rows: int
    factor: float


SCALE_CASES = [ScaleCase(16, 2.0), ScaleCase(32, 0.5)]


@pypto.frontend.jit
def scaled_copy(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), factor: float):
    pypto.set_vec_tile_shapes(16, 32)
    for i in pypto.loop(x.shape[0] // 16, name="rows", idx_name="i"):
        pypto.assemble(pypto.view(x, [16, 32], [i * 16, 0]) * factor, [i * 16, 0], out)


@pytest.mark.parametrize("case", SCALE_CASES)
def test_scaled_copy(case):
    x = torch.randn(case.rows, 32).npu()
    out = torch.zeros(case.rows, 32).npu()
    scaled_copy(x, out, case.factor)
    assert_allclose(out.cpu().numpy(), (x.cpu() * {expected}).numpy(), rtol=1e-6, atol=1e-6)
'''


def test_module_runs_each_parameter_set_its_parametrize_mark_gives_as_a_case(warm_sim, calculator_cache, tmp_path):
    """The gym's `@pytest.mark.parametrize("case", MATMUL_CASES)`: `case` was ours (None), an AttributeError and
    a kernel defect. Each set is a pytest item, and each item a case with its own verdict (docs/realops.md §4)."""
    path = tmp_path / "test_scaled_copy.py"
    path.write_text(PARAMETRIZED_MODULE.replace("{expected}", "(2.0 if case.rows == 16 else 0.25)"))
    cases = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim).cases
    assert [(c.case, c.verdict) for c in cases] == [("test_scaled_copy[case0]", "sim_garbage_graph_ok"),
                                                   ("test_scaled_copy[case1]", "graph_fail")], \
        [(c.case, c.verdict, c.error) for c in cases]
    assert [c.kernel_launches for c in cases] == [1, 1]


def test_a_modules_cases_are_its_collected_items_or_its_functions_when_collection_failed():
    from runtime.intake import testmodule
    from runtime.intake.testmodule import SkippedFunction, TestFunction

    items = [{"event": "pytest_items", "items": [{"id": "test_a[x]", "skip": None}, {"id": "test_a[y]", "skip": "no y"},
                                                 {"id": "test_b", "skip": None}]}]
    assert testmodule.cases_of(items, ["test_a", "test_b", "test_c"], [], {}) == [
        TestFunction("test_a[x]"), SkippedFunction("test_a[y]", "no y"), TestFunction("test_b"),
        SkippedFunction("test_c", testmodule.LEFT_OUT)]  # deselected by a conftest hook: said, never dropped
    # --case names an item, or a function for all its items; asked for, a skipped item runs.
    assert testmodule.cases_of(items, ["test_a", "test_b"], ["test_a"], {}) == [TestFunction("test_a[x]"),
                                                                                TestFunction("test_a[y]")]
    failed = [{"event": "pytest_items", "items": None, "error": "ModuleNotFoundError: No module named 'x'"}]
    assert testmodule.cases_of(failed, ["test_a", "test_b"], [], {"test_b": "later"}) == [
        TestFunction("test_a"), SkippedFunction("test_b", "later")]


def test_module_reads_its_card_from_the_environment_as_on_an_npu_host(warm_sim, calculator_cache, tmp_path):
    """The gym's `int(os.environ["TILE_FWK_DEVICE_ID"])` in a test function: a KeyError was a kernel defect."""
    path = tmp_path / "test_halve_env.py"
    path.write_text(GYM_STYLE_MODULE.replace("import pypto\n", "import os\nimport pypto\n").replace(
        "def test_halve(device_id):\n    check(device_id, 0.5)",
        "def test_halve():\n    check(int(os.environ[\"TILE_FWK_DEVICE_ID\"]), 0.5)"))
    case = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w",
                                           cases=["test_halve"]), warm=warm_sim).cases[0]
    assert case.verdict == "sim_garbage_graph_ok", (case.verdict, case.error)


def test_a_script_stopped_at_its_memory_limit_claims_no_compare(warm_sim, calculator_cache, tmp_path):
    """Killed before its compare, graph verify says so, never `no_compare` (docs/realops.md §10)."""
    path = tmp_path / "test_big_rows.py"
    path.write_text(GYM_STYLE_MODULE.replace("def test_halve(device_id):\n",
                                             "def test_halve(device_id):\n    hog = bytearray(3 * 1024 ** 3)\n"))
    case = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w",
                                           memory_bytes=1024 ** 3, cases=["test_halve"]), warm=warm_sim).cases[0]
    assert case.verdict == "resource_limit", (case.verdict, case.error)
    assert case.graph_verify["status"] == "unavailable" and "memory limit" in case.graph_verify["reason"]


ROW_GATHER = '''
import pypto
import torch
import torch_npu
from numpy.testing import assert_allclose

ROWS, WIDTH = 1024, 4096


@pypto.frontend.jit
def row_gather(src: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
               order: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
               out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32), rows: int, width: int):
    pypto.set_vec_tile_shapes(1, width)
    for i in pypto.loop(rows, name="rows", idx_name="i", unroll_list=[16, 4, 1]):
        picked = pypto.view(src, [1, width], [order[i], 0], valid_shape=[1, width])
        pypto.assemble(picked * 2.0, [i, 0], out)


def test_row_gather(device_id):
    torch.npu.set_device(device_id)
    src = torch.randn(ROWS, WIDTH, device=f"npu:{device_id}")
    order = torch.randperm(ROWS, dtype=torch.int32).to(f"npu:{device_id}")
    out = torch.zeros(ROWS, WIDTH, device=f"npu:{device_id}")
    row_gather(src, order, out, ROWS, WIDTH)
    assert_allclose(out.cpu().numpy(), (src.cpu()[order.cpu().long()] * 2.0).numpy(), rtol=1e-6, atol=1e-6)
'''


def test_a_case_only_graph_verify_cannot_afford_keeps_its_plain_sim_verdict(warm_sim, calculator_cache, tmp_path):
    """A 1,024-row loop of row views: the calculator needs more than 2 GiB, plain SIM under 1 GiB (the gym's
    moe_finalize_routing_v2 at 4,096 rows: more than 11.8 GiB). Not resource_limit, exit 3: SIM's verdict,
    graph verify unavailable with the reason (docs/realops.md §10)."""
    path = tmp_path / "test_row_gather.py"
    path.write_text(ROW_GATHER)
    case = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w",
                                           memory_bytes=3 * 1024 ** 3 // 2), warm=warm_sim).cases[0]
    assert case.verdict == "sim_output_unwritten", (case.verdict, case.verdict_reason)
    gv = case.graph_verify
    assert gv["status"] == "unavailable" and gv["rule"] == "graph-verify-memory", gv
    assert "1.50 GiB" in gv["reason"] and "--memory" in gv["reason"]


def test_a_gym_test_folder_given_as_the_path_is_its_checkouts_operator(tmp_path):
    from runtime.cli.cli_checkout import operators_of_test_folder as operator_of_test_folder

    for folder, route in (("Axpy", "script"), ("TileSigmoid", "package"), ("RowSquareMean", "module")):
        root, [op] = operator_of_test_folder(GYM / "tests" / "ops" / "vector" / folder)
        assert root == GYM.resolve() and op.route == route and op.folder == f"tests/ops/vector/{folder}", folder
    assert operator_of_test_folder(EXAMPLES / "softmax") is None  # a package of its own
    assert operator_of_test_folder(GYM / "tests") is None  # no operator's folder
    assert operator_of_test_folder(tmp_path) is None  # in no checkout
    (tmp_path / "src").mkdir()  # as /usr holds /usr/src: not a project, so never walked whole
    (tmp_path / "share" / "Op").mkdir(parents=True)
    assert operator_of_test_folder(tmp_path / "share" / "Op") is None


def test_discovery_pairs_test_and_kernel_folders_and_names_each_route():
    from runtime.intake.discover import discover

    found = {op.name: op for op in discover(GYM)}
    routes = {name: op.route for name, op in found.items()}
    assert routes["axpy"] == "script" and routes["row_square_mean"] == "module"
    assert routes["inplace_add_norm"] == "package"  # CamelCase test folder ~ snake_case kernel folder
    ian = found["inplace_add_norm"]
    assert ian.impl == "src/pypto_gym/ops/pypto_tile/vector/inplace_add_norm/inplace_add_norm_impl.py"
    assert ian.cases == ["level0", "level1"]
    assert found["row_square_mean"].cases == ["test_level0", "test_level1"]
    assert not any(f.startswith("src/pypto_gym/ops/pypto_tile/vector/axpy") for f in found["row_square_mean"].files)


def test_a_packed_operator_loads_back_as_the_same_job(tmp_path):
    from runtime.intake.discover import discover, pack
    from runtime.intake.submission import load_operator as load

    for op in discover(GYM):
        bundle = tmp_path / f"{op.name}.zip"
        bundle.write_bytes(pack(GYM, op))
        again, direct = submission.load(bundle, tmp_path / op.name), load(GYM, op)
        assert (again.kind, again.script, again.files, again.sha256) == \
            (direct.kind, direct.script, direct.files, direct.sha256), op.name
        assert again.impl == direct.impl and again.sys_path == direct.sys_path


def test_cli_lists_operators_and_refuses_an_ambiguous_checkout(capsys):
    from runtime.cli.cli import main

    assert main(["run", str(GYM), "--list"]) == 0
    out = capsys.readouterr().out
    assert "inplace_add_norm         package      2  tests/ops/vector/InplaceAddNorm" in out
    assert main(["run", str(GYM), "--no-graph-verify"]) == 2
    assert "choose with --op NAME" in capsys.readouterr().err


def test_cli_lists_a_test_modules_functions_and_its_skip_marks(capsys, tmp_path):
    from runtime.cli.cli import main

    path = tmp_path / "test_halve.py"
    path.write_text(GYM_STYLE_MODULE)
    assert main(["run", str(path), "--list"]) == 0
    out = capsys.readouterr().out
    assert "test_halve.py: module, 2 test function(s), 1 marked skip" in out
    assert "  test_halve_odd_rows  (marked skip: odd rows not supported yet; runs only with --case)" in out


def test_cli_list_says_a_script_is_asked_for_its_cases(capsys, tmp_path):
    from runtime.cli.cli import main

    (tmp_path / "src/pkg/ops/triple").mkdir(parents=True)
    (tmp_path / "src/pkg/ops/triple/triple_impl.py").write_text("import pypto\n")
    test = tmp_path / "tests/ops/Triple/test_triple.py"
    test.parent.mkdir(parents=True)
    test.write_text("import sys\nif '--list' in sys.argv:\n    print('ID: one')\n")
    (test.parent / "triple_golden.py").write_text("def triple_golden(x):\n    return 3 * x\n")
    assert main(["run", str(tmp_path), "--list"]) == 0
    out = capsys.readouterr().out
    assert "script       ?  tests/ops/Triple/test_triple.py" in out and "asks the script itself" in out


INPLACE = GYM / "tests/ops/vector/InplaceAddNorm"


def test_three_output_in_place_operator_compares_every_output_by_name(warm_sim, calculator_cache, tmp_path):
    from runtime.intake.discover import discover
    from runtime.intake.submission import load_operator as load

    op = discover(GYM, ["InplaceAddNorm"])[0]
    report = run_submission(GYM, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path), warm=warm_sim,
                            loaded=load(GYM, op))
    for case in report.cases:
        assert case.verdict == "sim_garbage_graph_ok", (case.verdict_reason, case.error)
        assert [o["name"] for o in case.outputs] == ["y", "x", "rstd"]
        for out in case.outputs:  # the graph's result, copied into x1/x2 by the wrapper, matches; SIM's did not
            assert out["graph_metrics"]["mismatch_count"] == 0 and out["metrics"]["mismatch_count"] > 0
        assert case.dtypes == ["bfloat16"] * 3


MUTATING_GOLDEN = '''
import torch


def scale_golden(x, y):
    x.mul_(2.0)  # written in place, not returned
    return x + y
'''
MUTATING_IMPL = '''
import pypto
import torch


@pypto.frontend.jit
def scale_kernel(x: pypto.Tensor([], pypto.DT_FP32), y: pypto.Tensor([], pypto.DT_FP32),
                 doubled: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    doubled[:] = x * {factor}
    out[:] = x * 2.0 + y


def run_scale(x, y):
    doubled, out = torch.empty_like(x), torch.empty_like(x)
    scale_kernel(x, y, doubled, out)
    x.copy_(doubled)
    return out
'''


@pytest.mark.parametrize("factor,verdict", [("2.0", "sim_garbage_graph_ok"), ("3.0", "graph_fail")])
def test_an_input_the_golden_mutates_is_compared_after_the_wrapper(warm_sim, calculator_cache, tmp_path, factor,
                                                                   verdict):
    pkg = tmp_path / "scale"
    pkg.mkdir()
    (pkg / "scale_golden.py").write_text(MUTATING_GOLDEN)
    (pkg / "scale_impl.py").write_text(MUTATING_IMPL.replace("{factor}", factor))
    (pkg / "test_cases.json").write_text('{"op_name": "scale", "test_cases": [{"id": "c", "seed": 3, "input": '
                                         '{"x_shape": [16, 32], "y_shape": [16, 32], "dtype": "float32"}}]}')
    report = run_submission(pkg, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    case = report.cases[0]
    assert case.verdict == verdict, case.verdict_reason
    assert [o["name"] for o in case.outputs] == ["output0", "x (in place)"]
    assert (case.outputs[1]["graph_metrics"]["mismatch_count"] == 0) == (factor == "2.0")


FUSED = '''
import torch
import torch_npu


def test_fused(device):
    torch_npu.npu.config.allow_internal_format = True  # before an NZ cast (gym quant_matmul_reduce_sum)
    x = torch.ones(4, device=device)
    assert torch_npu.Format.FRACTAL_NZ == 29
    return torch_npu.npu_fused_infer_attention_score(x, x, x)  # no CPU reference (docs/realops.md §12)
'''


def test_a_fused_torch_npu_op_is_sim_unsupported_with_one_line_naming_it(warm_sim, tmp_path):
    from runtime import exit_codes
    path = tmp_path / "test_fused.py"
    path.write_text(FUSED)
    report = run_submission(path, RunOptions(graph_verify=False, work_dir=tmp_path / "w"), warm=warm_sim)
    case = report.cases[0]
    assert case.verdict == "sim_unsupported", case.verdict_reason
    assert case.error.type == "NeedsRealNpu"
    assert case.error.message == ("torch_npu.npu_fused_infer_attention_score() needs a real NPU: the SIM stand-in for "
                                  "torch_npu cannot run it")
    assert "torch_npu.npu_fused_infer_attention_score()" in case.sim_gap  # SIM cannot judge it: no kernel defect (exit 3)
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.INFRA



def test_without_graph_verify_a_failed_assert_on_unwritten_sim_output_is_no_structural_error(warm_sim, tmp_path):
    report = run_submission(AXPY, RunOptions(graph_verify=False, work_dir=tmp_path), warm=warm_sim)
    for case in report.cases:
        assert case.verdict == "sim_output_unwritten", case.verdict_reason
        assert case.script["asserts_failed"] == case.script["asserts_failed_unwritten"] == 1


PARTIAL_SCRIPT = '''
import pypto
import torch
from numpy.testing import assert_allclose


@pypto.frontend.jit
def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 512)
    for c in pypto.loop(8, name="COLS", idx_name="c"):
        tile = pypto.view(x, [16, 512], [0, c * 512], valid_shape=[1, 512])
        pypto.assemble(pypto.sigmoid(tile), [0, c * 512], out)


if __name__ == "__main__":
    x = torch.randn(1, 4096)
    out = torch.zeros_like(x)
    k(x, out)
    assert_allclose(out.numpy(), torch.sigmoid(x).numpy(), rtol=1e-5, atol=1e-5)
'''


def test_partial_tile_graph_verify_is_unsupported_with_its_rule_and_the_case_still_judged(
        warm_sim, calculator_cache, tmp_path):
    path = tmp_path / "partial_sigmoid.py"
    path.write_text(PARTIAL_SCRIPT)
    case = run_submission(path, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim).cases[0]
    assert case.graph_verify["status"] == "unsupported", case.graph_verify
    assert case.graph_verify["rule"] == "graph-verify-partial-tile-composite"
    assert "valid_shape" in case.graph_verify["reason"] and "setStorage" in case.graph_verify["error"]["message"]
    assert case.verdict == "sim_output_unwritten", case.verdict_reason


MARKER_ONLY = '''
import sys
import pypto
import torch


@pypto.frontend.jit
def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x * 2.0


if __name__ == "__main__":
    x = torch.randn(16, 32)
    out = torch.empty_like(x)
    k(x, out)
    if "npu" in sys.argv:
        print("sum:", float(out.sum()))  # no compare in its NPU branch either (an allclose there is one)
    print("[PRECISION_PASS]")  # in SIM the script compares nothing, as some real tests do
'''


@pytest.mark.parametrize("graph,verdict", [(True, "sim_output_unwritten"), (False, "suspect_fake_pass")])
def test_a_pass_marker_without_any_compare_is_no_evidence_under_graph_verify(warm_sim, calculator_cache, tmp_path,
                                                                             graph, verdict):
    path = tmp_path / "marker_only.py"
    path.write_text(MARKER_ONLY)
    options = RunOptions(cache_dir=calculator_cache, graph_verify=graph, work_dir=tmp_path / "w")
    case = run_submission(path, options, warm=warm_sim).cases[0]
    assert case.script["markers"]["precision_pass"] == 1 and case.script["asserts_passed"] == 0
    assert case.verdict == verdict, case.verdict_reason


CAUGHT = '''
import sys
import traceback
import pypto
import torch


@pypto.frontend.jit
def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x * 2.0


def main():
    try:
        x = torch.randn(16, 32)
        k(x, torch.empty_like(x))
        raise ValueError("level0 could not be checked")
    except Exception:
        traceback.print_exc()  # real tests catch, print and return 1
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def test_a_script_that_catches_and_prints_its_exception_names_it_as_the_error(warm_sim, tmp_path):
    path = tmp_path / "caught.py"
    path.write_text(CAUGHT)
    case = run_submission(path, RunOptions(graph_verify=False, work_dir=tmp_path / "w"), warm=warm_sim).cases[0]
    assert case.verdict == "structural_error" and case.script["exit_code"] == 1, case.verdict_reason
    assert (case.error.type, case.error.message) == ("ValueError", "level0 could not be checked")


def test_a_caught_parser_error_on_a_call_of_another_pypto_is_version_skew(warm_sim, tmp_path):
    path = tmp_path / "caught_skew.py"
    path.write_text(CAUGHT.replace("    pypto.set_vec_tile_shapes(16, 32)\n",
                                   "    pypto.set_vec_tile_shapes(16, 32)\n"
                                   "    pypto.set_pass_options(vec_nbuffer_setting={'DEFAULT': 2})\n"))
    case = run_submission(path, RunOptions(graph_verify=False, work_dir=tmp_path / "w"), warm=warm_sim).cases[0]
    assert case.error.file == "caught_skew.py" and case.error.line == 11, case.error
    assert case.verdict == "version_skew", case.verdict_reason


def test_an_op_sim_cannot_simulate_is_sim_unsupported_and_no_kernel_defect(warm_sim, calculator_cache, tmp_path):
    # pypto.gathermask compiles, but the 0.2.0 SIM cost model has no pipe for GATHER_MASK (gym InterleaveRope).
    from runtime import exit_codes
    package = REPO / "tests/fixtures/diagnosis/sim-opcode-unsupported"
    report = run_submission(package, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path), warm=warm_sim)
    case = report.cases[0]
    assert (case.verdict, case.diagnosis[0].rule) == ("sim_unsupported", "sim-opcode-unsupported"), case.verdict_reason
    assert "GATHER_MASK" in (case.sim_gap or "") and "SIM stops" in case.graph_verify["reason"]
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.INFRA


SRC_LAYOUT_TEST = '''
import argparse

import torch
from numpy.testing import assert_allclose
from mypkg.ops.triple_impl import triple_wrapper  # the checkout's src/ as `pip install -e .` puts it


def test_triple():
    x = torch.randn(16, 32)
    assert_allclose(triple_wrapper(x).numpy(), (x * 3).numpy(), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("case", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--run_mode", "--run-mode", default="npu", choices=["npu", "sim"])
    if parser.parse_args().list:
        print("  triple::test_triple  \\u2014 three times x")
    else:
        test_triple()
'''


PATH_BUILT_TEST = '''
import sys
from pathlib import Path

import torch
import torch_npu  # noqa: F401

_IMPL = Path(__file__).resolve().parents[3] / "src/mypkg/ops/toy_model/row_scale"
sys.path.insert(0, str(_IMPL))

from numpy.testing import assert_allclose
from row_scale import scale_rows


def test_row_scale():
    x = torch.randn(16, 32).npu()
    out = scale_rows(x)
    assert_allclose(out.cpu().numpy(), (x.cpu() * 4.0).numpy(), rtol=1e-6, atol=1e-6)
'''


def test_a_test_importing_its_kernel_by_a_path_it_builds_into_src(warm_sim, calculator_cache, tmp_path):
    """The gym's deepseek_v2_lite_chat: `parents[3] / "src/pypto_gym/ops/…/mla_prolog"` on sys.path, then `from
    mla_prolog import …`; the kernel file is no *_impl.py. It was not found (ModuleNotFoundError, not_run exit 3),
    and discovery called the folder unrunnable (docs/realops.md §10)."""
    from runtime.intake.discover import discover

    kernel = tmp_path / "checkout/src/mypkg/ops/toy_model/row_scale/row_scale.py"
    kernel.parent.mkdir(parents=True)
    for package in (kernel.parent, kernel.parent.parent):  # `row_scale/` is also a package: not what it imports
        (package / "__init__.py").write_text("")
    kernel.write_text("import pypto\nimport torch\n\n\n@pypto.frontend.jit\n"
                      "def k(x: pypto.Tensor([16, 32], pypto.DT_FP32), out: pypto.Tensor([16, 32], pypto.DT_FP32)):\n"
                      "    pypto.set_vec_tile_shapes(16, 32)\n    out[:] = x * 4.0\n\n\n"
                      "def scale_rows(x):\n    out = torch.empty_like(x)\n    k(x, out)\n    return out\n")
    test = tmp_path / "checkout/tests/ops/toy_model/test_row_scale.py"
    test.parent.mkdir(parents=True)
    test.write_text(PATH_BUILT_TEST)
    (test.parent / "test_cases.json").write_text('{"op_name": "row_scale", "test_cases": [{"id": "c1"}]}')
    report = run_submission(test, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    assert [(c.case, c.verdict) for c in report.cases] == [("test_row_scale", "sim_garbage_graph_ok")], \
        report.cases[0].error
    [found] = discover(tmp_path / "checkout")
    assert (found.name, found.route, found.entry) == ("row_scale", "module", "tests/ops/toy_model/test_row_scale.py")
    assert "src/mypkg/ops/toy_model/row_scale/row_scale.py" in found.files


def test_a_test_importing_the_checkouts_src_layout_by_package_name(warm_sim, calculator_cache, tmp_path):
    # gym mhc_sinkhorn: `from pypto_gym.ops... import` with no sys.path edit, and ids listed before a description.
    pkg = tmp_path / "checkout/src/mypkg/ops"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "triple_impl.py").write_text(MODULE.split("def test_triple")[0].replace("import torch_npu\n", "")
                                        + "\ndef triple_wrapper(x):\n    out = torch.zeros_like(x)\n"
                                          "    k(x, out)\n    return out\n")
    test = tmp_path / "checkout/tests/ops/Triple/test_triple.py"
    test.parent.mkdir(parents=True)
    test.write_text(SRC_LAYOUT_TEST)
    assert submission.load(test, Path("/nonexistent")).root == (tmp_path / "checkout").resolve()
    report = run_submission(test, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    assert [(c.case, c.verdict) for c in report.cases] == [("triple::test_triple", "sim_garbage_graph_ok")], \
        report.cases[0].error
