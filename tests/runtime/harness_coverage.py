"""Run one case through the job harness (runtime/job/child.py) in this process under coverage, and save
the lines it executed. Used by test_shared_harness.py: `python harness_coverage.py MODE KIND OUT`.

KIND "package" runs examples/relu's first case, "broken" examples/missing_vec_tiles' (a kernel that
fails to compile), "script" a two-line script. The harness ends the
process with os._exit; the data file is saved first.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import coverage

REPO = Path(__file__).resolve().parents[2]
MEASURED = ["runtime/job/child.py", "runtime/devices/device.py", "runtime/job/timing.py"]


def main(mode: str, kind: str, out: str) -> None:
    cov = coverage.Coverage(data_file=out, include=[str(REPO / m) for m in MEASURED])
    from runtime.intake import submission
    from runtime.fence.jobenv import write_sim_config
    from runtime.runner import RunOptions, CaseRunner
    from runtime.warm.client import _pypto_lib_dir

    work = Path(tempfile.mkdtemp(prefix="harness-cov-"))
    path = {"package": REPO / "examples" / "relu", "broken": REPO / "examples" / "missing_vec_tiles"}.get(
        kind, work / "script.py")
    if kind == "script":
        path.write_text("import torch\nprint(torch.ones(2).sum())\n")
    sub = submission.load(path, work / "sub")

    class Warm:  # what CaseRunner reads from a warm parent to build a request
        config_path = write_sim_config(_pypto_lib_dir(), work / "tile_fwk_config.json")

    runner = CaseRunner(sub, RunOptions(mode=mode, device_id=2 if mode == "npu" else None, graph_verify=False),
                         work, [], [])
    runner.warm = Warm()  # type: ignore[assignment]
    _, req = runner._prepare(sub.case_file.cases[0] if sub.case_file else "main")
    from runtime.job import child

    real_exit = os._exit

    def save_then_exit(code: int) -> None:
        cov.stop()
        cov.save()
        real_exit(code)

    child.os._exit = save_then_exit  # type: ignore[attr-defined]
    _, write = os.pipe()
    cov.start()
    child.main(req, write)


if __name__ == "__main__":
    main(*sys.argv[1:4])
