"""Scripts written like pypto's own examples: NPU-only compares, `id. Name` listings, helpers beside them,
`./output` read back, test-only packages (issue 26, docs/realops.md §9). Our scripts, in their styles."""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

# The kernels live beside the script, imported by name as Python's sys.path[0] resolves them.
KERNELS = '''
import sys
import pypto

MODE = pypto.RunMode.NPU if "--run_mode" in sys.argv and sys.argv[sys.argv.index("--run_mode") + 1] == "npu" \\
    else pypto.RunMode.SIM


@pypto.frontend.jit(runtime_options={"run_mode": MODE})
def scale_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out.move(pypto.mul(x, 2.0))
'''

# An NPU-first script: the compare runs only on the NPU branch, the card id comes from TILE_FWK_DEVICE_ID.
SCRIPT = '''
import argparse
import os
import sys

import torch
from numpy.testing import assert_allclose

import scale_ops

GOLDEN_FACTOR = {golden}


def device_of(card):
    return f"npu:{{card}}" if card is not None else "cpu"


def case_scale(card):
    x = torch.rand(16, 32, device=device_of(card))
    y = torch.empty_like(x)
    scale_ops.scale_kernel(x, y)
    if scale_ops.MODE == scale_ops.pypto.RunMode.NPU:
        assert_allclose(y.cpu().numpy(), (x * GOLDEN_FACTOR).cpu().numpy(), rtol=1e-4, atol=1e-5)
    print("scale done")


def case_shapes(card):
    t = torch.zeros(4, 8, device=device_of(card))
    assert t.shape == (4, 8)


CASES = {{
    "ops::case_scale": ("Scale by two", case_scale),
    "ops::case_shapes": ("Tensor shapes only, no kernel", case_shapes),
}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--run_mode", default="npu", choices=["npu", "sim"])
    args = parser.parse_args()
    if args.list:
        for key, (name, _) in CASES.items():
            print(f"  {{key}}. {{name}}")
            print("     a description line\\n")
        return
    if args.case is not None and args.case not in CASES:
        print(f"unknown case {{args.case}}")
        sys.exit(1)
    card = None
    if args.run_mode == "npu":
        if "TILE_FWK_DEVICE_ID" not in os.environ:
            print("set TILE_FWK_DEVICE_ID")
            return
        card = int(os.environ["TILE_FWK_DEVICE_ID"])
        import torch_npu  # noqa: F401
        torch.npu.set_device(card)
    for key, (_, fn) in CASES.items():
        if args.case in (None, key):
            fn(card)


if __name__ == "__main__":
    main()
'''


def write(folder: Path, golden: float) -> Path:
    folder.mkdir()
    (folder / "scale_ops.py").write_text(KERNELS)
    script = folder / "scale_example.py"
    script.write_text(SCRIPT.format(golden=golden))
    return script


def by_case(report):
    return {c.case: c for c in report.cases}


def test_an_npu_only_compare_is_judged_on_the_graph_in_an_emulated_npu_branch(calculator_cache, tmp_path):
    report = run_submission(write(tmp_path / "ok", 2.0),
                            RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"))
    cases = by_case(report)
    # ids without the listing's trailing period: the script would reject `ops::case_scale.`
    assert set(cases) == {"ops::case_scale", "ops::case_shapes"}
    scale = cases["ops::case_scale"]
    assert scale.verdict == "sim_garbage_graph_ok", (scale.verdict_reason, scale.error)
    assert scale.graph_verify["source"] == "emulated_npu_branch"
    assert scale.graph_verify["sim_run"] == {"verdict": "sim_output_unwritten", "graph_verify": "no_compare"}
    assert scale.graph_verify["metrics"]["rtol"] == 1e-4  # the script's own tolerance
    assert "not an NPU result" in scale.verdict_reason
    shapes = cases["ops::case_shapes"]
    assert (shapes.verdict, shapes.stage) == ("not_run", "no_kernel")
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK


def test_a_wrong_npu_only_compare_fails_on_the_graph_with_the_scripts_message(calculator_cache, tmp_path):
    report = run_submission(write(tmp_path / "wrong", 3.0),
                            RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w", cases=["ops::case_scale"]))
    scale = by_case(report)["ops::case_scale"]
    assert scale.verdict == "graph_fail"
    assert scale.graph_verify["source"] == "emulated_npu_branch" and scale.graph_verify["status"] == "fail"
    assert "Not equal to tolerance" in scale.error.message
    assert scale.graph_verify["metrics"]["max_abs_diff"] > 0
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.KERNEL_DEFECT


COST_STYLE = '''
import os
import sys

import pypto
import torch


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def plus_one(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out.move(pypto.add(x, 1.0))


def newest_call_folder():
    folders = [os.path.join("output", d) for d in os.listdir("output")] if os.path.isdir("output") else []
    return max(folders, key=os.path.getctime) if folders else None


if __name__ == "__main__":
    x = torch.rand(16, 32)
    plus_one(x, torch.empty_like(x))
    folder = newest_call_folder()
    assert folder, "pypto wrote no call folder under ./output"
    assert os.path.isfile(os.path.join(folder, "CostModelSimulationOutput", "merged_swimlane.json")), folder
'''


def test_pypto_output_is_where_a_plain_run_leaves_it(tmp_path):
    # `./output` beside the script with pypto's stock simulator files; `crosscheck run` starts its own warm parent.
    script = tmp_path / "read_output.py"
    script.write_text(COST_STYLE)
    report = run_submission(script, RunOptions(graph_verify=False, work_dir=tmp_path / "w"))
    case = report.cases[0]
    assert case.verdict == "sim_output_unwritten", (case.verdict_reason, case.error)


def test_a_test_package_the_host_lacks_is_the_environments_gap(warm_sim, tmp_path):
    script = tmp_path / "needs_tool.py"
    script.write_text("import torch\nimport crosscheck_absent_test_tool\n\nif __name__ == '__main__':\n    pass\n")
    report = run_submission(script, RunOptions(graph_verify=False, work_dir=tmp_path / "w"), warm=warm_sim)
    case = report.cases[0]
    assert (case.verdict, case.stage) == ("not_run", "environment")
    assert "pip install crosscheck_absent_test_tool" in case.verdict_reason
    assert case.diagnosis[0].rule == "python-package-missing"
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.INFRA
