"""docs/pypto.md §3: pypto's graph verify on CPU tensors, stock 0.2.0 and with our one-method fix.

Each variant runs in its own process: `python docs/repro/graph_verify.py [stock|fixed|golden-once]`
(no argument: all three). A kernel computes x * 2 + y and softmax(x); the registered golden is torch's
result, or a deliberately wrong one to show that a FAILED comparison does not raise.
"""
import csv
import ctypes
import subprocess
import sys
from pathlib import Path

from common import load_calculator, scratch, silenced

VERIFY = {"enable_pass_verify": True, "pass_verify_pass_filter": []}  # the tensor graph only


def kernels():  # type: ignore[no-untyped-def]
    import pypto

    sim = {"run_mode": pypto.RunMode.SIM}

    @pypto.frontend.jit(runtime_options=sim, verify_options=VERIFY)
    def scale_add(x: pypto.Tensor([], pypto.DT_FP32), y: pypto.Tensor([], pypto.DT_FP32),
                  out: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(32, 64)
        out[:] = x * 2.0 + y

    @pypto.frontend.jit(runtime_options=sim, verify_options=VERIFY)
    def softmax(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 128)
        shifted = x - pypto.amax(x, dim=-1, keepdim=True)
        numer = pypto.exp(shifted)
        out[:] = numer / pypto.sum(numer, dim=-1, keepdim=True)

    return scale_add, softmax


def install_fix() -> None:
    """For CPU tensors, register the real tensors with pypto instead of stock's zero-filled copies."""
    from pypto import pypto_impl
    from pypto.frontend.parser.entry import JitCallableWrapper, _pto_to_tensor_data
    from pypto.runtime import _pto_verify_datas

    def setup_verify_data(pto_tensors):  # type: ignore[no-untyped-def]
        pypto_impl.SetVerifyData(_pto_to_tensor_data(pto_tensors), [], _pto_verify_datas.get_data())

    JitCallableWrapper._setup_verify_data = staticmethod(setup_verify_data)


def csv_path() -> Path | None:
    import pypto

    found = sorted(Path(pypto.pypto_impl.LogTopFolder()).glob("verify_*/verify_result_brief.csv"))
    return found[-1] if found else None


def csv_rows() -> list[dict[str, str]]:
    ctypes.CDLL(None).fflush(None)  # pypto writes the CSV through stdio buffers
    path = csv_path()
    if path is None:
        return []
    with open(path) as f:
        return [{k.strip(): (v or "").strip() for k, v in r.items() if k} for r in csv.DictReader(f)]


def call(label: str, kernel, args, golden, expected):  # type: ignore[no-untyped-def]
    import pypto
    import torch

    before = [a.clone() for a in args]
    if golden is not None:
        pypto.set_verify_golden_data(goldens=[None] * (len(args) - 1) + [golden])
    unflushed = -1
    try:
        with silenced():
            kernel(*args)
            path = csv_path()
            unflushed = path.stat().st_size if path else -1  # before anything flushes stdio
        raised = "no"
    except Exception as exc:  # noqa: BLE001
        raised = f"{type(exc).__name__}: {str(exc)[:80]}"
    rows = csv_rows()
    print(f"  {label}: raised {raised}; CSV bytes before fflush {unflushed}; rows "
          + ("; ".join(f"{r['passName']} vs {r['referPassName']}: {r['verifyResult']} maxAbsDiff {r['maxAbsDiff']}"
                      for r in rows) or "none, no CSV written"))
    *inputs, out = args
    changed = [i for i, (a, b) in enumerate(zip(inputs, before)) if not torch.equal(a, b)]
    zeroed = [i for i in changed if not inputs[i].any()]
    print(f"    inputs changed: {changed or 'none'} (now all zero: {zeroed or 'none'}); "
          f"output all zero: {not out.any()}; max |out - torch| {float((out - expected).abs().max()):.3g}")
    return rows


def variant(name: str) -> None:
    scratch(f"graph-verify-{name}")
    import pypto  # noqa: F401
    import torch

    print(f"== {name}: {load_calculator()}")
    if name != "stock":
        install_fix()
    scale_add, softmax = kernels()
    torch.manual_seed(0)

    def fresh():  # type: ignore[no-untyped-def]
        return torch.randn(64, 128), torch.randn(64, 128)

    x, y = fresh()
    rows = call("scale_add, right golden", scale_add, [x, y, torch.zeros_like(x)], x * 2 + y, x * 2 + y)
    if name == "golden-once":
        x, y = fresh()
        call("scale_add again, golden not registered again", scale_add, [x, y, torch.zeros_like(x)], None, x * 2 + y)
        return
    print(f"    CSV columns: {', '.join(rows[0])}" if rows else "    no CSV")
    x, y = fresh()
    call("scale_add, wrong golden (x*3+y)", scale_add, [x, y, torch.zeros_like(x)], x * 3 + y, x * 2 + y)
    x, _ = fresh()
    call("softmax, right golden", softmax, [x, torch.zeros_like(x)], torch.softmax(x, -1), torch.softmax(x, -1))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        variant(sys.argv[1])
    else:
        for v in ("stock", "fixed", "golden-once"):
            subprocess.run([sys.executable, __file__, v], check=False)
