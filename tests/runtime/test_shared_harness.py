"""The NPU harness is the SIM harness: every line of runtime/job/child.py that an NPU run executes (on the
torch_npu test double, up to the kernel launch it cannot make) is executed by SIM runs too. Only the
device layer (runtime/devices/device.py's Npu and load_torch_npu) is NPU-only. Shown with coverage.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import coverage
import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
DRIVER = Path(__file__).with_name("harness_coverage.py")
DOUBLE = REPO / "tests" / "npu_double"


def executed(tmp: Path, mode: str, kind: str) -> dict[str, set[int]]:
    out = tmp / f"{mode}-{kind}.coverage"
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "TILE_FWK_DEVICE_ID", "TASK_DEVICE")}
    env["PYTHONPATH"] = f"{REPO}:{env.get('PYTHONPATH', '')}"
    if mode == "npu":
        env.update(CROSSCHECK_NPU_TEST_DOUBLE=str(DOUBLE), ASCEND_HOME_PATH=str(DOUBLE / "cann"),
                   PYTHONPATH=f"{DOUBLE}:{env['PYTHONPATH']}")
        code = "import torch, torch_npu, runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
        cmd = [sys.executable, "-c", code, str(DRIVER), mode, kind, str(out)]
    else:
        cmd = [sys.executable, str(DRIVER), mode, kind, str(out)]
    done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert out.exists(), done.stderr[-3000:]
    data = coverage.CoverageData(basename=str(out))
    data.read()
    return {Path(f).relative_to(REPO).as_posix(): set(data.lines(f) or []) for f in data.measured_files()}


def device_layer_lines() -> set[int]:
    """Lines of runtime/devices/device.py that only an NPU run can execute: the Npu class and load_torch_npu."""
    tree = ast.parse((REPO / "runtime" / "devices" / "device.py").read_text())
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name in ("Npu", "load_torch_npu"):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def test_npu_runs_execute_no_harness_line_that_sim_runs_do_not(tmp_path: Path) -> None:
    sim: dict[str, set[int]] = {}
    for kind in ("package", "broken", "script"):  # a SIM success, a SIM failure, a script
        for f, lines in executed(tmp_path, "sim", kind).items():
            sim.setdefault(f, set()).update(lines)
    npu_package = executed(tmp_path, "npu", "package")
    npu_script = executed(tmp_path, "npu", "script")
    assert len(npu_package["runtime/job/child.py"]) > 60  # the NPU run went through the harness to the launch
    npu_only = {f: (npu_package.get(f, set()) | npu_script.get(f, set())) - sim.get(f, set())
                for f in ("runtime/job/child.py", "runtime/devices/device.py")}
    assert npu_only["runtime/devices/device.py"] and npu_only["runtime/devices/device.py"] <= device_layer_lines()
    # In the harness itself, the NPU's only lines of its own say that graph verify is SIM's.
    child_lines = (REPO / "runtime" / "job" / "child.py").read_text().splitlines()
    assert {n: child_lines[n - 1].strip() for n in sorted(npu_only["runtime/job/child.py"])} == \
        {n: child_lines[n - 1].strip() for n in graph_verify_refusal()}


def graph_verify_refusal() -> set[int]:
    """The body of `if req["mode"] != "sim":` in child._install_graph_verify."""
    tree = ast.parse((REPO / "runtime" / "job" / "child.py").read_text())
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_install_graph_verify")
    branch = next(n for n in ast.walk(func) if isinstance(n, ast.If) and "mode" in ast.unparse(n.test))
    return {line for stmt in branch.body for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)}
