"""docs/pypto.md §7: two false passes, seen from outside the wrapper, on the repository's example cheats.

- examples/golden_fallback: the kernel raises, the wrapper returns torch's answer instead.
- examples/unwritten_output: the kernel rebinds `out` and never writes it; SIM runs it with 0 tasks.
The jit wrapper's __call__ is wrapped here to count launches and note whether each raised.
"""
import importlib.util
import re
from pathlib import Path

from common import scratch, silenced

root = scratch("cheats")
import pypto  # noqa: E402
import torch  # noqa: E402
from pypto.frontend.parser.entry import JitCallableWrapper  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
launches: list[str] = []
stock_call = JitCallableWrapper.__call__


def counted_call(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    try:
        result = stock_call(self, *args, **kwargs)
    except Exception as exc:
        launches.append(f"raised {type(exc).__name__}")
        raise
    launches.append("returned")
    return result


JitCallableWrapper.__call__ = counted_call


def load(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / name / f"{name}_impl.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


torch.manual_seed(0)
x = torch.randn(64, 128)
launches.clear()
with silenced():
    result = load("golden_fallback").golden_fallback_wrapper(x)
diff = float((result - torch.sigmoid(x)).abs().max())
print(f"golden_fallback: wrapper returned normally; max |result - golden| = {diff}; "
      f"bit-identical: {torch.equal(result, torch.sigmoid(x))}; jit launches: {launches}")

y = torch.randn(64, 128)
launches.clear()
with silenced():
    out = load("unwritten_output").unwritten_output_wrapper(x, y)
report = (Path(pypto.pypto_impl.LogTopFolder()) / "CostModelSimulationOutput" / "_simulate.stat.report.txt").read_text()
tasks = re.search(r"Total Submit Tasks\.*:\s*(\d+)", report).group(1)
print(f"unwritten_output: jit launches: {launches}; SIM submitted tasks: {tasks}; "
      f"output equals x + y: {torch.allclose(out, x + y)}")
