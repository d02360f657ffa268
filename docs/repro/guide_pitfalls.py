"""docs/pypto.md §9: the SIM debugging guide's pitfalls, each as one small kernel run in a fresh process.

For every row it prints how the call ended (returned, or the exception raised), and in which streams the
row's text appeared (exception, stdout, stderr). Rows marked "compile in NPU mode" decorate the kernel with
pypto.RunMode.NPU and call the wrapper's compile() directly (parse and trace with the kernel's runtime options): a
CPU host cannot launch in NPU mode ('Not npu device' comes before any compile).

Usage: python docs/repro/guide_pitfalls.py [ROW ...]   (default: every row)
"""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from common import scratch

ANSI = re.compile(r"\x1b\[[0-9;]*m")
HEAD = """\
import sys
import pypto
import torch

MODE = pypto.RunMode.{mode}


@pypto.frontend.jit(runtime_options={{"run_mode": MODE{options}}})
def kernel({params}){ret}:
{body}
"""
CALL = """
args = [torch.randn(*size) for size in {sizes}]
try:
    if {compile_only}:
        kernel.compile(args, kernel._cached_signature[0])
    else:
        kernel(*args)
    print("CALL: returned")
except BaseException as exc:
    print(f"CALL RAISED: {{type(exc).__name__}}: {{' '.join(str(exc).split())[:200]}}")
"""
DYN = "[pypto.DYNAMIC, 64]"
LOOP_VIEW = "    for i in pypto.loop(2):\n        part = {view}\n        pypto.assemble(part + 1.0, [i * 16, 0], out)"
MATMUL_DYN = "    pypto.set_cube_tile_shapes([32, 32], [64, 64], [64, 64])\n    out[:] = pypto.matmul(x, w, pypto.DT_FP32)"
# row: (kernel body, annotation shape, input size, text to look for, extras)
ROWS = {
    "slice with a symbolic stop": (
        "    pypto.set_vec_tile_shapes(16, 64)\n    rows = x.shape[0]\n    for i in pypto.loop((rows + 15) // 16):\n"
        "        stop = pypto.min(i * 16 + 16, rows)\n        pypto.assemble(x[i * 16:stop, :] + 1.0, [i * 16, 0], out)",
        DYN, "40, 64", "Cannot convert symbols to int", {}),
    "the fix: pypto.view with valid_shape": (
        "    pypto.set_vec_tile_shapes(16, 64)\n    rows = x.shape[0]\n    for i in pypto.loop((rows + 15) // 16):\n"
        "        stop = pypto.min(i * 16 + 16, rows)\n"
        "        part = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[stop - i * 16, 64])\n"
        "        pypto.assemble(part + 1.0, [i * 16, 0], out)",
        DYN, "40, 64", None, {}),
    "view: shape of 3 entries, offsets of 2": (
        "    pypto.set_vec_tile_shapes(16, 64)\n" + LOOP_VIEW.format(view="pypto.view(x, [1, 16, 64], [i * 16, 0])"),
        "[32, 64]", "32, 64", "Their size actually are", {}),
    "view: shape of 2 entries, offsets of 3": (
        "    pypto.set_vec_tile_shapes(16, 64)\n" + LOOP_VIEW.format(view="pypto.view(x, [16, 64], [i * 16, 0, 0])"),
        "[32, 64]", "32, 64", "lhs.size()", {}),
    "return annotation -> None": (
        "    pypto.set_vec_tile_shapes(16, 64)\n    out[:] = x + 1.0", "[32, 64]", "32, 64",
        "Return annotation is not allowed", {"ret": " -> None"}),
    "vec tiles 8 on B=1 and H=4": (
        "    pypto.set_vec_tile_shapes(8, 8, 8, 8)\n    out[:] = x + 1.0", "[1, 16, 4, 32]", "1, 16, 4, 32", None, {}),
    "stitch_function_max_num on a simple kernel": (
        "    pypto.set_vec_tile_shapes(16, 64)\n    out[:] = x + 1.0", "[32, 64]", "32, 64", None,
        {"options": ', "stitch_function_max_num": 128'}),
    "B, T, H, K = x.shape": (
        "    pypto.set_vec_tile_shapes(1, 16, 4, 32)\n    B, T, H, K = x.shape\n    out[:] = x + 1.0",
        "[1, 16, 4, 32]", "1, 16, 4, 32", None, {}),
    "unpacking the tensor itself": (
        "    pypto.set_vec_tile_shapes(16, 64)\n    a, b = x\n    out[:] = x + 1.0", "[32, 64]", "32, 64",
        "Cannot unpack non-sequence type Tensor", {}),
    "float loop bound (n / 16)": (
        "    pypto.set_vec_tile_shapes(16, 64)\n" + LOOP_VIEW.replace("pypto.loop(2)", "pypto.loop(32 / 16)").format(
            view="pypto.view(x, [16, 64], [i * 16, 0])"), "[32, 64]", "32, 64", "Invalid value type", {}),
    "symbolic loop bound (x.shape[0] // 16)": (
        "    pypto.set_vec_tile_shapes(16, 64)\n" + LOOP_VIEW.replace("pypto.loop(2)", "pypto.loop(x.shape[0] // 16)")
        .format(view="pypto.view(x, [16, 64], [i * 16, 0])"), DYN, "32, 64", None, {}),
    "matmul without cube tiles, compile in NPU mode": (
        "    pypto.set_vec_tile_shapes(32, 32)\n    out[:] = pypto.matmul(x, x, pypto.DT_FP32)", "[32, 32]", "32, 32",
        "kL0=0", {"mode": "NPU", "compile_only": True}),
    "matmul without cube tiles, SIM": (
        "    pypto.set_vec_tile_shapes(32, 32)\n    out[:] = pypto.matmul(x, x, pypto.DT_FP32)", "[32, 32]", "32, 32",
        "kL0=0", {}),
    "matmul on a DYNAMIC dim, compile in NPU mode": (
        MATMUL_DYN, DYN, "64, 64", "dim[0] = -1", {"mode": "NPU", "compile_only": True, "w": True}),
    "matmul on a DYNAMIC dim, SIM": (
        MATMUL_DYN, DYN, "64, 64", "dim[0] = -1", {"w": True}),
}
LATE_RUN_MODE = '''\
import argparse
import pypto
import torch

RUN_MODE = pypto.RunMode.NPU


@pypto.frontend.jit(runtime_options={"run_mode": RUN_MODE})
def kernel(x: pypto.Tensor([32, 64], pypto.DT_FP32), out: pypto.Tensor([32, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = x + 1.0


def main():
    global RUN_MODE
    parser = argparse.ArgumentParser()
    parser.add_argument("--run_mode", default="npu")
    RUN_MODE = pypto.RunMode.SIM if parser.parse_args().run_mode == "sim" else pypto.RunMode.NPU
    x = torch.randn(32, 64)
    kernel(x, torch.zeros_like(x))
    print("CALL: returned")


main()
'''


def source(row: str) -> str:
    body, shape, size, _, extra = ROWS[row]
    params = [f"x: pypto.Tensor({shape}, pypto.DT_FP32)", f"out: pypto.Tensor({shape}, pypto.DT_FP32)"]
    sizes = [f"({size})", f"({size})"]
    if extra.get("w"):  # a second, static operand for matmul
        params.insert(1, "w: pypto.Tensor([64, 64], pypto.DT_FP32)")
        sizes.insert(1, "(64, 64)")
    head = HEAD.format(mode=extra.get("mode", "SIM"), options=extra.get("options", ""), params=", ".join(params),
                       ret=extra.get("ret", ""), body=body)
    return head + CALL.format(sizes=f"[{', '.join(sizes)}]", compile_only=extra.get("compile_only", False))


def run(row: str, text: str, key: str | None, args: list[str]) -> None:
    root = scratch("guide")
    path = root / f"row_{abs(hash(row))}.py"
    path.write_text(text)
    env = {**os.environ, "TILE_FWK_OUTPUT_DIR": str(root / "output")}
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, cwd=root, env=env,
                          timeout=300)
    out, err = ANSI.sub("", proc.stdout), proc.stderr
    ended = re.findall(r"^CALL(?: RAISED)?: .*$", out, re.M)
    if not ended:
        last = [line for line in err.strip().splitlines() if line.strip()]
        ended = [f"exit {proc.returncode}: {last[-1] if last else ''}"]
    exc_line = ended[0] if ended[0].startswith("CALL RAISED") or ended[0].startswith("exit") else ""
    where = [name for name, t in (("exception", exc_line), ("stdout", out.replace(exc_line, "")), ("stderr", err))
             if key and key in t]
    print(f"{row}: {ended[0][:220]}")
    if key:
        print(f"    {key!r} found in: {', '.join(where) or 'NOWHERE'}")


if __name__ == "__main__":
    wanted = sys.argv[1:] or [*ROWS, "run_mode bound at import, --run_mode sim"]
    for name in wanted:
        if name == "run_mode bound at import, --run_mode sim":
            run(name, textwrap.dedent(LATE_RUN_MODE), "Not npu device", ["--run_mode", "sim"])
        else:
            run(name, source(name), ROWS[name][3], [])
