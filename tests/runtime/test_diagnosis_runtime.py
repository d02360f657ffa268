"""Every diagnosis rule that SIM can trigger is produced by the real runtime on its fixture kernel."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "diagnosis"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())

# Fixtures whose trigger the runtime deliberately removes: it controls the job's environment and
# forces the run mode, and its argument snapshot rejects meta tensors before pypto does.
NOT_UNDER_RUNTIME = {
    "ascend-home-on-cpu-host": "the job environment never carries ASCEND_HOME_PATH on a CPU host",
    "output-dir-missing": "the runtime sets TILE_FWK_OUTPUT_DIR to the job's own folder",
    "not-npu-device": "the runtime forces the requested mode, so SIM runs this kernel",
    "mixed-devices": "meta tensors stand in for a second device and stop at the argument snapshot",
}
NAMES = sorted(n for n, e in MANIFEST.items() if n not in NOT_UNDER_RUNTIME and not e.get("case_passes"))


@pytest.fixture(scope="module")
def reports(warm_sim, calculator_cache, tmp_path_factory):
    out = {}
    for name in NAMES:
        timeout = float(MANIFEST[name].get("timeout_s", 60))
        options = RunOptions(cache_dir=calculator_cache, timeout_s=min(timeout, 10),
                             work_dir=tmp_path_factory.mktemp(name))
        out[name] = run_submission(FIXTURES / name, options, warm=warm_sim)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_first_diagnosis_is_the_fixtures_rule(reports, name):
    case = reports[name].cases[0]
    rules = [d.rule for d in case.diagnosis]
    assert rules and rules[0] == MANIFEST[name]["rule"], (case.verdict, rules, case.error)
    assert case.verdict not in ("sim_output_unwritten", "sim_garbage_graph_ok", "pass")
