"""A returned copy of the kernel's output is the kernel's; a copy made out of the harness's sight is not.

The dual-path fix (tests/hostile/test_dual_path.py) made every returned tensor no launch was handed the
wrapper's own, so honest wrappers returning `out.clone()` were `suspect_fake_pass`. The harness now
follows torch's data flow while the wrapper runs (runtime/evidence/flow.py, docs/realops.md §7). Real
runtime, real pypto SIM with graph verify.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runtime import verdicts
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

WRAPPER = '''

def relu_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    relu_kernel(x, out)
    return {returned}
'''
# Out of the mode's sight: nothing the kernel wrote is marked, so the copy is the wrapper's own.
DISABLED = '''

def relu_wrapper(x: torch.Tensor) -> torch.Tensor:
    from torch.utils._python_dispatch import _disable_current_modes

    out = torch.empty_like(x)
    with _disable_current_modes():
        relu_kernel(x, out)
        copy = out.clone()
    return copy
'''


def _package(root: Path, wrapper: str) -> Path:
    pkg = root / "relu"
    shutil.copytree(EXAMPLES / "relu", pkg)
    impl = pkg / "relu_impl.py"
    impl.write_text(impl.read_text().split("\n\ndef relu_wrapper")[0] + wrapper)
    return pkg


def _verdicts(pkg: Path, warm, cache: Path, work: Path) -> list[tuple[str, str]]:
    report = run_submission(pkg, RunOptions(cache_dir=cache, work_dir=work, timeout_s=120), warm=warm)
    return [(c.verdict, c.verdict_reason) for c in report.cases]


@pytest.mark.parametrize("returned", ["out.clone()", "out.float()", "out.clone().reshape(-1).reshape(x.shape)",
                                      "out.t().contiguous().t().contiguous()", "torch.cat([out[:1], out[1:]])"])
def test_a_copy_of_the_kernels_output_is_the_kernels(warm_sim, calculator_cache, tmp_path, returned):
    pkg = _package(tmp_path, WRAPPER.format(returned=returned))
    seen = _verdicts(pkg, warm_sim, calculator_cache, tmp_path / "work")
    assert len(seen) == 2
    for verdict, reason in seen:
        assert verdict == verdicts.SIM_GARBAGE_GRAPH_OK, (returned, reason)


def test_a_copy_made_with_the_mode_disabled_stays_the_wrappers(warm_sim, calculator_cache, tmp_path):
    seen = _verdicts(_package(tmp_path, DISABLED), warm_sim, calculator_cache, tmp_path / "work")
    assert len(seen) == 2
    for verdict, reason in seen:
        assert verdict == verdicts.SUSPECT_FAKE_PASS, reason
        assert "did not write" in reason, reason
