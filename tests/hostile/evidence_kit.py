"""Shared pieces of the evidence attacks: a tiny operator package, a warm parent that keeps the raw
job reports (events included) for the unfixed harness functions, and secrets to look for."""
from __future__ import annotations

import json
import os
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runtime.runner import RunOptions, run_submission

KERNEL = '''
import pypto
import torch


@pypto.frontend.jit
def op_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x * 2.0
'''
NORMAL = "out = torch.empty_like(x)\nop_kernel(x, out)\nreturn out"


def package(root: Path, wrapper_body: str, prelude: str = "", name: str = "op") -> Path:
    """An operator package whose wrapper runs `wrapper_body`; `prelude` goes before the kernel."""
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "test_cases.json").write_text(json.dumps({"op_name": "op", "test_cases": [
        {"id": "c1", "seed": 3, "input": {"shape": [16, 32], "dtype": "float32"}, "rtol": 1e-3, "atol": 1e-3}]}))
    (pkg / "op_impl.py").write_text("import torch\n" + textwrap.dedent(prelude) + KERNEL
                                    + "\n\ndef op_wrapper(x):\n" + textwrap.indent(textwrap.dedent(wrapper_body), "    ")
                                    + "\n")
    (pkg / "op_golden.py").write_text("def op_golden(x):\n    return x * 2.0\n")
    return pkg


class RecordingWarm:
    """The session's warm parent, keeping each raw job report (what the leader sent back)."""

    def __init__(self, warm: Any):
        self.warm = warm
        self.raw: list[dict[str, Any]] = []

    @property
    def config_path(self) -> Path:
        return self.warm.config_path

    @property
    def log_dir(self) -> Path:
        return self.warm.log_dir

    def run_job(self, request: dict[str, Any]) -> dict[str, Any]:
        report = self.warm.run_job(request)
        self.raw.append(report)
        return report

    def run_jobs(self, requests: list[dict[str, Any]], parallel: int) -> Iterator[tuple[int, dict[str, Any]]]:
        jobs = self.warm.run_jobs(requests, parallel)
        try:
            for index, report in jobs:
                self.raw.append(report)
                yield index, report
        finally:
            jobs.close()


def run(pkg: Path, warm: Any, work: Path, **options: Any) -> tuple[Any, dict[str, Any]]:
    """Run the package's one case; (CaseResult, the leader's raw report)."""
    recording = RecordingWarm(warm)
    options.setdefault("graph_verify", False)
    report = run_submission(pkg, RunOptions(work_dir=work, **options), warm=recording)  # type: ignore[arg-type]
    assert len(report.cases) == 1 and len(recording.raw) == 1
    return report.cases[0], recording.raw[0]


def secret_file(folder: Path, name: str) -> tuple[Path, str]:
    """A root-only file holding a fresh secret."""
    folder.mkdir(parents=True, exist_ok=True)
    value = f"SECRET-{uuid.uuid4().hex}"
    path = folder / name
    path.write_text(json.dumps({"admin": value}) + "\n")
    path.chmod(0o600)
    return path, value


def tree_text(folder: Path) -> str:
    """Every regular file under folder, concatenated (links are not followed)."""
    parts = []
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)
