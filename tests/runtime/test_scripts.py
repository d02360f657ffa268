"""Scripts following the `--run_mode npu|sim [case_id]` convention run unchanged."""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

HEADER = '''
import sys
import numpy as np
import pypto
import torch
from numpy.testing import assert_allclose

MODE = pypto.RunMode.SIM if "sim" in sys.argv else pypto.RunMode.NPU


@pypto.frontend.jit(runtime_options={"run_mode": MODE})
def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x + 1.0
'''


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "kernel_script.py"
    path.write_text(HEADER + body)
    return path


def run(path: Path, warm, tmp_path: Path, **kw):
    return run_submission(path, RunOptions(graph_verify=False, work_dir=tmp_path / "w", **kw), warm=warm)


def test_exit_zero_without_kernel_is_not_run(warm_sim, tmp_path):
    report = run(script(tmp_path, "\nif __name__ == '__main__':\n    print('nothing to do')\n"), warm_sim, tmp_path)
    assert [c.verdict for c in report.cases] == ["not_run"]


def test_asserting_golden_against_itself_is_suspect(warm_sim, tmp_path):
    body = '''
if __name__ == "__main__":
    x = torch.randn(16, 32)
    out = torch.empty_like(x)
    k(x, out)
    golden = x + 1.0
    assert_allclose(golden.numpy(), (x + 1.0).numpy(), rtol=1e-3, atol=1e-3)
    print("[PRECISION_PASS] Max diff: 0.0")
'''
    case = run(script(tmp_path, body), warm_sim, tmp_path).cases[0]
    assert case.verdict == "suspect_fake_pass" and case.kernel_launches == 1
    assert case.script["asserts_passed"] == 1 and case.script["markers"]["precision_pass"] == 1


def test_script_error_is_structural(warm_sim, tmp_path):
    body = '''
if __name__ == "__main__":
    x = torch.randn(16, 32)
    k(x, x, x)
'''
    case = run(script(tmp_path, body), warm_sim, tmp_path).cases[0]
    assert case.verdict == "structural_error" and case.script["exit_code"] == 1


def test_selected_case_ids_are_passed_as_arguments(warm_sim, tmp_path):
    body = '''
if __name__ == "__main__":
    wanted = [a for a in sys.argv[1:] if not a.startswith("--") and a not in ("npu", "sim")]
    assert wanted == ["grp::one"], sys.argv
    x = torch.randn(16, 32)
    out = torch.empty_like(x)
    k(x, out)
'''
    report = run(script(tmp_path, body), warm_sim, tmp_path, cases=["grp::one"])
    assert [(c.case, c.verdict) for c in report.cases] == [("grp::one", "sim_output_unwritten")]


@pytest.mark.parametrize("listing", [
    # pypto configures the root logger at import, so `basicConfig` is a no-op and the ids reach stderr as
    # `INFO:__main__:  ID: one` (a gym script's `--list`, docs/realops.md §1).
    'LOGGER.info("  ID: %s", case_id)',
    # bare `group::case` lines with an indented description (pypto's matmul_ops.py example)
    'print(f"  grp::{case_id}\\n     what it tests\\n")',
], ids=["logging", "bare-node-ids"])
def test_case_ids_a_script_lists_are_its_cases(warm_sim, tmp_path, listing):
    body = f'''
import logging
LOGGER = logging.getLogger(__name__)

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if "--list" in sys.argv:
        for case_id in ("one", "two"):
            {listing}
        sys.exit(0)
    assert len([a for a in sys.argv[1:] if not a.startswith("--") and a != "sim"]) == 1, sys.argv
    x = torch.randn(16, 32)
    out = torch.empty_like(x)
    k(x, out)
'''
    report = run(script(tmp_path, body), warm_sim, tmp_path)
    prefix = "grp::" if "grp" in listing else ""
    assert [(c.case, c.verdict) for c in report.cases] == [(prefix + "one", "sim_output_unwritten"),
                                                          (prefix + "two", "sim_output_unwritten")]


def test_a_listing_we_cannot_read_runs_the_script_whole_not_with_guessed_arguments(warm_sim, tmp_path):
    # `--list` prints "  1. description" and the script takes a 1-based index; the ids of the
    # test_cases.json beside it are no arguments it accepts (gym quant_matmul_reduce_sum).
    (tmp_path / "test_cases.json").write_text('{"test_cases": [{"id": "p0_core"}]}')
    body = '''
import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("case", type=int, nargs="?")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        print("  1. the only case")
        sys.exit(0)
    x = torch.randn(16, 32)
    out = torch.empty_like(x)
    k(x, out)
'''
    report = run(script(tmp_path, body), warm_sim, tmp_path)
    assert [(c.case, c.verdict) for c in report.cases] == [("main", "sim_output_unwritten")]


@pytest.mark.parametrize("option", ['"--run-mode", default="npu", choices=["npu"]',
                                    '"--run-mode", default="npu", choices=["npu", "sim"]'])
def test_the_run_mode_option_is_given_as_the_script_spells_and_allows_it(warm_sim, tmp_path, option):
    # gym GatherPaKvCache: `--run-mode` with a dash, and only "npu" allowed: `--run_mode sim` made argparse exit 2.
    # No `--list` option either: asking for the listing made it exit 2 as well.
    body = f'''
import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument({option})
    args = parser.parse_args()
    assert args.run_mode == ("sim" if "sim" in {option!r} else "npu"), args
    x = torch.randn(16, 32)
    out = torch.empty_like(x)
    k(x, out)
'''
    report = run(script(tmp_path, body), warm_sim, tmp_path)
    assert [(c.case, c.verdict) for c in report.cases] == [("main", "sim_output_unwritten")], report.cases[0].error
