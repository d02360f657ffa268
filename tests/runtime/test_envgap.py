"""A package the job's Python lacks is the environment's gap, not the kernel's (runtime/judge/envgap.py)."""
from __future__ import annotations

from runtime.judge import envgap
from runtime.report import ErrorInfo


def missing(message: str) -> ErrorInfo:
    return ErrorInfo(type="ModuleNotFoundError", message=message)


def test_a_third_party_package_is_named(tmp_path):
    (tmp_path / "kernel.py").write_text("import pytest\n")
    assert envgap.missing_package(missing("No module named 'pytest'"), tmp_path, launches=0) == "pytest"
    assert envgap.missing_package(missing("No module named 'scipy.special'"), tmp_path, launches=0) == "scipy"
    assert "pip install pytest" in envgap.reason("pytest")


def test_the_submissions_own_module_torch_npu_pypto_and_later_failures_are_not(tmp_path):
    (tmp_path / "rope_impl.py").write_text("x = 1\n")
    assert envgap.missing_package(missing("No module named 'rope_impl'"), tmp_path, launches=0) is None
    assert envgap.missing_package(missing("No module named 'torch_npu'"), tmp_path, launches=0) is None
    assert envgap.missing_package(missing("No module named 'pypto.frontend.x'"), tmp_path, launches=0) is None
    assert envgap.missing_package(missing("No module named 'pytest'"), tmp_path, launches=1) is None
    other = ErrorInfo(type="ImportError", message="cannot import name 'x' from 'y'")
    assert envgap.missing_package(other, tmp_path, launches=0) is None
