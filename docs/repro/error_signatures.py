"""docs/pypto.md §4: where each PyPTO 0.2.0 error shows up, by running the diagnosis fixture kernels raw.

Each fixture under tests/fixtures/diagnosis/<name>/ is a tiny operator package with one known bug. This
script calls its wrapper in a fresh process (plain pypto, none of our runtime) and reports the outcome
and in which stream the signature appeared: exception, stdout, stderr or the plog.

Usage: python docs/repro/error_signatures.py [FIXTURE ...]   (default: the fixtures of the §4 table)
"""
import importlib.util
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from common import scratch

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "diagnosis"
# fixture -> the text that identifies its error (None: the outcome is a signal or a timeout)
SIGNATURES = {
    "vec-tile-shape-not-set": "tile shape not set",
    "view-valid-shape-rank": "Their size actually are",
    "view-offsets-rank": "lhs.size():2, rhs.size():3",
    "view-shape-offsets": "Their size actually are 2 and 3",
    "slice-symbolic-bounds": "Cannot convert symbols to int",
    "cube-tile-not-set": "kL0=0",
    "cube-tile-l1-l0-relation": "Invalid L1/L0 relation",
    "cube-tile-alignment": "aligned to 16",
    "matmul-dynamic-dim": "dim[0] = -1",
    "dynamic-shape-int32-max": "INT32_MAX",
    "reduce-tile-32byte-align": "32Byte align",
    "tile-exceeds-l0a": "exceeds MEM_L0A",
    "tile-exceeds-l0b": "exceeds MEM_L0B",
    "tile-exceeds-l0c": "exceeds MEM_L0C",
    "tile-exceeds-ub": "exceeds MEM_UB",
    "return-annotation": "Return annotation is not allowed",
    "tensor-param-not-annotated": "must not be a torch.Tensor",
    "non-tensor-param-order": "must come after all tensor parameters",
    "symbolic-tile-shape": "Not concrete value",
    "loop-bound-type": "Invalid value type",
    "range-over-symbolic": "cannot be interpreted as an integer",
    "iterate-tensor": "Cannot unpack non-sequence",
    "missing-tensor-args": "Expected at least",
    "non-contiguous-tensor": "contiguous",
    "not-npu-device": "Not npu device",
    "option-value-type": "map::at",
    "output-dir-missing": "Failed to create dir",
    "record-function-failed": "Record function",
    "ascend-home-on-cpu-host": "libc_sec.so",
    "graph-verify-mismatch": "FB4001",
    "noise-graph-verify-index": "F7A001",
    "crash-fpe": None,
    "loop-idx-name-duplicate": None,
    "timeout": None,
}
# Run with graph verify on (the CPU-tensor fix of graph_verify.py) and the fixture's golden registered.
WITH_GRAPH_VERIFY = {"graph-verify-mismatch", "noise-graph-verify-index"}
TIMEOUT_S = 60
HANG_WATCH_S = 20
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def child(fixture: Path) -> None:
    """Call the fixture's wrapper on its first case, the way a pypto-gym test does."""
    import torch

    name = fixture.name.replace("-", "_")
    spec = importlib.util.spec_from_file_location(f"{name}_impl", fixture / f"{name}_impl.py")
    case = json.loads((fixture / "test_cases.json").read_text())["test_cases"][0]
    torch.manual_seed(case.get("seed", 0))
    specs = case.get("inputs") or [case["input"]]
    args = [torch.randn(*s["shape"]).to(getattr(torch, s["dtype"])) for s in specs]
    try:
        impl = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(impl)
        if fixture.name in WITH_GRAPH_VERIFY:
            register_golden(fixture, name, args)
        getattr(impl, f"{name}_wrapper")(*args)
        print("\nCHILD: returned normally", flush=True)
    except BaseException as exc:  # noqa: BLE001 - the point is to show what pypto raises
        line = getattr(getattr(exc, "node", None), "lineno", None)  # set on pypto's parser errors
        where = f"(exc.node.lineno={line}) " if line else ""
        print(f"\nCHILD RAISED: {where}{type(exc).__module__}.{type(exc).__name__}: {exc}\nCHILD END", flush=True)


def register_golden(fixture: Path, name: str, args: list) -> None:  # type: ignore[type-arg]
    import pypto
    from common import load_calculator
    from graph_verify import install_fix

    load_calculator()
    install_fix()
    spec = importlib.util.spec_from_file_location(f"{name}_golden", fixture / f"{name}_golden.py")
    golden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden)
    pypto.set_verify_options(enable_pass_verify=True, pass_verify_pass_filter=[])
    pypto.set_verify_golden_data(goldens=[None] * len(args) + [getattr(golden, f"{name}_golden")(*args)])


def rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return 0.0


def run(name: str) -> None:
    fixture = FIXTURES / name
    root = scratch(f"sig-{name}")
    env = {**os.environ, **json.loads((FIXTURES / "manifest.json").read_text()).get(name, {}).get("env", {})}
    out, err = open(root / "stdout.txt", "w+"), open(root / "stderr.txt", "w+")
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(fixture)], stdout=out, stderr=err,
                            env=env, cwd=root, start_new_session=True)
    start, samples = time.monotonic(), []
    while proc.poll() is None and time.monotonic() - start < (HANG_WATCH_S if name == "timeout" else TIMEOUT_S):
        samples.append((time.monotonic() - start, rss_mb(proc.pid)))
        time.sleep(0.5)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        (t0, m0), (t1, m1) = samples[-10], samples[-1]  # the last 5 s, well after the imports
        outcome = f"still running after {time.monotonic() - start:.0f} s, memory growing {(m1 - m0) / (t1 - t0):.0f} MB/s"
    elif proc.returncode < 0:
        outcome = f"killed by {signal.Signals(-proc.returncode).name}"
    else:
        outcome = f"exit {proc.returncode}"
    out.seek(0)
    err.seek(0)
    streams = {"stdout": ANSI.sub("", out.read()), "stderr": err.read(),
               "plog": "".join(p.read_text(errors="replace") for p in (root / "logs").rglob("pypto-log-*.log"))}
    raised = re.findall(r"^CHILD RAISED: (.*?)\nCHILD END$", streams["stdout"], re.M | re.S)
    streams["exception"] = raised[0] if raised else ""
    streams["stdout"] = streams["stdout"].replace(streams["exception"], "")
    key = SIGNATURES.get(name)
    where = [s for s in ("exception", "stdout", "stderr", "plog") if key and key in streams[s]]
    first = " ".join(raised[0].split())[:150] if raised else "-"
    print(f"{name}: {outcome}; raised: {first}")
    if key:
        print(f"    {key!r} found in: {', '.join(where) or 'NOWHERE'}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(Path(sys.argv[2]))
    else:
        for fixture_name in sys.argv[1:] or SIGNATURES:
            run(fixture_name)
