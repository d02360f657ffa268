"""The dual-path fake pass (issue 25): the wrapper launches a correct kernel into a scratch buffer and returns
torch's own result. With graph verify on, the graph's result in the scratch buffer equals torch's maths bit for
bit, so on main the harness took the returned tensor for a copy of the kernel's output: `sim_garbage_graph_ok`
(acceptable) in 5 of 5 idle runs, `suspect_fake_pass` once under load. The returned tensor was never handed to
a launch: it is the wrapper's own, whatever the load. Runs through the real runtime, idle and beside a CPU hog.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import verdicts
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

RUNS = 3
DUAL_PATH = '''

def relu_wrapper(x: torch.Tensor) -> torch.Tensor:
    scratch = torch.empty_like(x)
    relu_kernel(x, scratch)  # the kernel runs, and its result is thrown away
    return torch.relu(x)
'''
HOG = "import os\nos.nice(0)\nwhile True:\n    pass\n"


def dual_path(root: Path) -> Path:
    pkg = root / "relu"
    shutil.copytree(EXAMPLES / "relu", pkg)
    impl = pkg / "relu_impl.py"
    impl.write_text(impl.read_text().split("\n\ndef relu_wrapper")[0] + DUAL_PATH)
    return pkg


def _verdicts(pkg: Path, warm, cache: Path, work: Path) -> list[tuple[str, str]]:
    report = run_submission(pkg, RunOptions(cache_dir=cache, work_dir=work, timeout_s=120), warm=warm)
    return [(c.verdict, c.verdict_reason) for c in report.cases]


@pytest.mark.parametrize("load", ["idle", "cpu_hog"])
def test_the_dual_path_fake_pass_is_caught_every_time(warm_sim, calculator_cache, tmp_path, load):
    pkg = dual_path(tmp_path)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(2 if load == "cpu_hog" else 0)]
    try:
        seen = [_verdicts(pkg, warm_sim, calculator_cache, tmp_path / f"work{i}") for i in range(RUNS)]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    for run in seen:
        assert len(run) == 2
        for verdict, reason in run:
            assert verdict == verdicts.SUSPECT_FAKE_PASS, (load, run)
            assert "did not write" in reason, reason


def test_a_wrapper_copying_the_kernels_result_into_its_input_still_counts(warm_sim, calculator_cache, tmp_path):
    """The control (docs/realops.md §7): `x.copy_(out)` into a tensor the launch was handed is the kernel's."""
    pkg = tmp_path / "relu"
    shutil.copytree(EXAMPLES / "relu", pkg)
    impl = pkg / "relu_impl.py"
    impl.write_text(impl.read_text().split("\n\ndef relu_wrapper")[0] + '''

def relu_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    relu_kernel(x, out)
    x.copy_(out)
    return x
''')
    for verdict, reason in _verdicts(pkg, warm_sim, calculator_cache, tmp_path / "work"):
        assert verdict == verdicts.SIM_GARBAGE_GRAPH_OK, reason
