"""docs/versions.md §1: what pypto 0.2.0 says to kernels written for a newer pypto (plain pypto, none of our runtime).

Runs the wrapper of each of our version-skew kernels in a fresh process and prints the installed pypto's version
and the last line of the exception it raised.

Usage: python docs/repro/version_skew.py
"""
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from common import scratch

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
KERNELS = {  # what the kernel uses -> its package
    "pypto.PrecisionType.INTRINSIC": FIXTURES / "diagnosis" / "pypto-api-missing",
    'set_pass_options(vec_nbuffer_setting={"DEFAULT": 2})': FIXTURES / "diagnosis" / "pypto-call-mismatch",
    "-> pypto.Tensor(...) on the jit kernel (no skew: docs/pypto.md §9)": FIXTURES / "pitfalls" / "return_annotation",
}
CHILD = """
import importlib, json, sys, torch
pkg = sys.argv[1]
sys.path.insert(0, pkg)
name = json.load(open(pkg + "/test_cases.json"))["op_name"]
impl = importlib.import_module(name + "_impl")
wrapper = getattr(impl, name + "_wrapper")
args = [torch.ones(32, 64) for _ in range(wrapper.__code__.co_argcount)]
try:
    wrapper(*args)
    print("ran without error")
except Exception as exc:
    print(type(exc).__name__ + ": " + str(exc).splitlines()[0])
"""

if __name__ == "__main__":
    scratch("version-skew")
    print(f"pypto {metadata.version('pypto')}")
    for what, pkg in KERNELS.items():
        out = subprocess.run([sys.executable, "-c", CHILD, str(pkg)], capture_output=True, text=True, timeout=300)
        last = (out.stdout.strip().splitlines() or [out.stderr.strip()[-300:]])[-1]
        print(f"{what}\n    {last}")
