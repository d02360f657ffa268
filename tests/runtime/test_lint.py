"""runtime.lint: each rule fires on its pattern (at the marked line) and stays quiet on the close negative."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime.lint import GOLDEN_FALLBACK, RULES, SEVERITY, lint_files, lint_source

MARK = "# <-"


def lint(src: str, file: str = "op_impl.py") -> list:
    return lint_source(textwrap.dedent(src), file)


def lines(src: str, rule: str) -> list[int]:
    """Lines where `rule` fires."""
    return [f.line for f in lint(src) if f.rule == rule]


def marked(src: str) -> list[int]:
    """Lines carrying the `# <-` marker."""
    return [i for i, text in enumerate(textwrap.dedent(src).splitlines(), 1) if MARK in text]


def assert_fires(src: str, rule: str) -> None:
    assert lines(src, rule) == marked(src), [(f.rule, f.line, f.message) for f in lint(src)]


def assert_quiet(src: str, rule: str | None = None) -> None:
    found = [f for f in lint(src) if rule is None or f.rule == rule]
    assert found == [], [(f.rule, f.line, f.message) for f in found]


def kernel(body: str, params: str = "x: pypto.Tensor([32, 64], pypto.DT_FP32), "
           "out: pypto.Tensor([32, 64], pypto.DT_FP32)", decorator: str = "@pypto.frontend.jit") -> str:
    """A module with one jit kernel whose body is `body` (indented 4)."""
    return f"import pypto\nimport torch\n\n\n{decorator}\ndef k({params}):\n" + textwrap.indent(
        textwrap.dedent(body), "    ")


# --- the public surface ------------------------------------------------------------------------


def test_rules_are_documented_with_a_severity():
    assert GOLDEN_FALLBACK == "golden-fallback" and GOLDEN_FALLBACK in RULES
    assert set(SEVERITY) == set(RULES)
    assert set(SEVERITY.values()) <= {"error", "warning", "info"}
    for rule, text in RULES.items():
        assert rule == rule.lower() and " " not in rule and text.endswith(".")


def test_syntax_error_yields_no_findings():
    assert lint_source("def broken(:\n    pass\n", "bad.py") == []


def test_source_with_syntax_warnings_is_linted_quietly():
    assert lint_source('import re\nPATTERN = re.compile("\\d+")\n', "a.py") == []


def test_plain_python_yields_no_findings():
    assert lint_source("import torch\n\ndef f(x):\n    return torch.relu(x)\n", "golden.py") == []


def test_finding_carries_file_line_source_and_severity():
    src = kernel("pypto.set_vec_tile_shapes(16, 64)\nout[:] = x + 1.0\n").replace("):\n", ") -> None:\n", 1)
    [finding] = lint(src, file="pkg/op_impl.py")
    assert (finding.rule, finding.severity, finding.file, finding.line) == (
        "return-annotation", "error", "pkg/op_impl.py", 6)
    assert finding.source.startswith("def k(") and finding.source.endswith("-> None:")
    assert "Return annotation is not allowed" in finding.message


def test_module_imports_neither_torch_nor_pypto_nor_other_runtime_modules():
    code = ("import sys, runtime.lint\n"
            "assert not {'torch', 'pypto'} & set(sys.modules)\n"
            "ours = {m for m in sys.modules if m.startswith('runtime.') and not m.startswith('runtime.lint')}\n"
            "assert ours == {'runtime.report', 'runtime.verdicts', 'runtime.modes',\n"  # the report contract
            "                'runtime.intake', 'runtime.intake.python_ast'}, ours\n")  # the parse lock (docs/platform.md §6)
    subprocess.run([sys.executable, "-c", code], check=True)


# --- return-annotation -------------------------------------------------------------------------


@pytest.mark.parametrize("imports, decorator", [
    ("import pypto", "@pypto.frontend.jit"),
    ("import pypto", "@pypto.frontend.jit(runtime_options={'run_mode': pypto.RunMode.SIM})"),
    ("import pypto", "@pypto.jit"),
    ("import pypto as pp", "@pp.frontend.jit()"),
    ("from pypto.frontend import jit", "@jit"),
    ("from pypto.frontend import jit", "@jit(runtime_options={})"),
])
def test_return_annotation_fires_for_every_jit_spelling(imports, decorator):
    src = f"""\
    {imports}
    import pypto


    {decorator}
    def k(x: pypto.Tensor(), out: pypto.Tensor()) -> None:  # <-
        pypto.set_vec_tile_shapes(16, 64)
        out[:] = x + 1.0
    """
    assert_fires(src, "return-annotation")


def test_return_annotation_quiet_on_helpers():
    src = """\
    import pypto


    def core(x: pypto.Tensor) -> pypto.Tensor:
        return pypto.exp(x)


    @pypto.frontend.jit
    def k(x: pypto.Tensor(), out: pypto.Tensor()):
        pypto.set_vec_tile_shapes(16, 64)
        out[:] = core(x)
    """
    assert_quiet(src)


# --- future-annotations ------------------------------------------------------------------------


def test_future_annotations_fires_in_a_kernel_file():
    src = "from __future__ import annotations  # <-\n" + kernel("pypto.set_vec_tile_shapes(16, 64)\nout[:] = x * 2\n")
    assert_fires(src, "future-annotations")


def test_future_annotations_quiet_without_kernels():
    assert_quiet("from __future__ import annotations\nimport torch\n\ndef golden(x):\n    return x * 2\n")


# --- tensor-iteration --------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    "for row in x:  # <-\n    out[:] = row\n",
    "a, b = x  # <-\n",
    "rows = list(x)  # <-\n",
    "rows = tuple(out)  # <-\n",
    "it = iter(x)  # <-\n",
    "for i, row in enumerate(x):  # <-\n    pass\n",
    "v = x[0:16, :]\nfor row in v:  # <-\n    pass\n",
])
def test_tensor_iteration_fires(body):
    assert_fires(kernel("pypto.set_vec_tile_shapes(16, 64)\n" + body), "tensor-iteration")


@pytest.mark.parametrize("body", [
    "a, b = x.shape\n",
    "rows, cols = x.shape\nfor d in x.shape:\n    pass\n",
    "dims = list(x.shape)\n",
    "*batch, d = x.shape\n",
    "values, indices = pypto.topk(x, 4, -1)\n",
])
def test_tensor_iteration_quiet_on_shapes(body):
    assert_quiet(kernel("pypto.set_vec_tile_shapes(16, 64)\n" + body + "out[:] = x + 1.0\n"), "tensor-iteration")


def test_tensor_iteration_fires_inside_a_helper_the_kernel_calls():
    src = """\
    import pypto


    def core(t):
        return list(t)  # <-


    @pypto.frontend.jit
    def k(x: pypto.Tensor(), out: pypto.Tensor()):
        pypto.set_vec_tile_shapes(16, 64)
        core(x)
    """
    assert_fires(src, "tensor-iteration")


# --- symbolic-tile-shape -----------------------------------------------------------------------

DYNAMIC_PARAMS = ("x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), "
                  "out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), n: int")


@pytest.mark.parametrize("body", [
    "bs, d = x.shape\npypto.set_vec_tile_shapes(bs, 64)  # <-\n",
    "pypto.set_vec_tile_shapes(x.shape[0] // 2, 64)  # <-\n",
    "shape = x.shape\nrows = shape[0]\npypto.set_vec_tile_shapes(min(rows, 8), 64)  # <-\n",
    "for i in pypto.loop(n):\n    pypto.set_vec_tile_shapes(i + 1, 64)  # <-\n",
    "pypto.set_cube_tile_shapes([x.shape[0], 32], [32, 32], [32, 32])  # <-\n",
])
def test_symbolic_tile_shape_fires(body):
    assert_fires(kernel(body + "out[:] = x + 1.0\n", params=DYNAMIC_PARAMS), "symbolic-tile-shape")


@pytest.mark.parametrize("params, body", [
    (DYNAMIC_PARAMS, "pypto.set_vec_tile_shapes(1, x.shape[1])\n"),  # the DYNAMIC dim is 0, not 1
    (DYNAMIC_PARAMS, "pypto.set_vec_tile_shapes(TILE, n)\n"),  # module constant and int parameter
    (DYNAMIC_PARAMS, "tiles = [32 for _ in range(len(x.shape))]\npypto.set_vec_tile_shapes(*tiles)\n"),
    ("x: pypto.Tensor([32, 64], pypto.DT_FP32), out: pypto.Tensor([32, 64], pypto.DT_FP32)",
     "pypto.set_vec_tile_shapes(x.shape[0] // 2, 64)\n"),  # static dims are concrete
    ("x: pypto.Tensor(), out: pypto.Tensor()", "rows, cols = x.shape\npypto.set_vec_tile_shapes(rows, cols)\n"),
])
def test_symbolic_tile_shape_quiet_on_concrete_sizes(params, body):
    src = kernel(body + "out[:] = x + 1.0\n", params=params).replace("import torch\n", "import torch\nTILE = 8\n")
    assert_quiet(src, "symbolic-tile-shape")


def test_symbolic_tile_shape_quiet_on_unroll_lengths_and_trailing_static_dims():
    body = """\
    d = x.shape[-1]
    for idx, rows in pypto.loop_unroll(0, x.shape[0], 1, unroll_list=[8, 4, 1]):
        pypto.set_vec_tile_shapes(rows, d)
        pypto.set_cube_tile_shapes([pypto.min(rows, 16), 16], [32, 32], [32, 32])
        pypto.assemble(pypto.view(x, [rows, d], [idx, 0]) + 1.0, [idx, 0], out)
    """
    params = ("x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32), "
              "out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32)")
    assert_quiet(kernel(body, params=params))


# --- golden-fallback ---------------------------------------------------------------------------

KERNEL_MODULE = """\
import pypto
import torch


@pypto.frontend.jit
def softmax_kernel(x: pypto.Tensor(), out: pypto.Tensor()):
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = pypto.softmax(x, -1)


"""


@pytest.mark.parametrize("handler", [
    "return Softmax_golden(x)  # <-",
    "return torch.softmax(x, dim=-1)  # <-",
    "return x  # <-",
    "out = reference_softmax(x)  # <-",
    "out.copy_(torch.softmax(x, -1))  # <-",
])
def test_golden_fallback_fires(handler):
    src = KERNEL_MODULE + textwrap.dedent(f"""\
    def Softmax_wrapper(x):
        out = torch.empty_like(x)
        try:
            softmax_kernel(x, out)
        except Exception:
            {handler}
        return out
    """)
    assert_fires(src, GOLDEN_FALLBACK)
    assert {f.severity for f in lint(src) if f.rule == GOLDEN_FALLBACK} == {"error"}


def test_golden_fallback_fires_around_a_wrapper_in_a_test_file():
    src = """\
    import torch
    from softmax_impl import Softmax_wrapper
    from softmax_golden import Softmax_golden


    def test_case():
        x = torch.randn(4, 64)
        try:
            y = Softmax_wrapper(x)
        except RuntimeError:
            y = Softmax_golden(x)  # <-
        torch.testing.assert_close(y, Softmax_golden(x))
    """
    assert_fires(src, GOLDEN_FALLBACK)


@pytest.mark.parametrize("handler", [
    "raise",
    "print('kernel failed', e)\n        raise RuntimeError('kernel failed') from e",
])
def test_golden_fallback_quiet_when_the_handler_reraises(handler):
    src = KERNEL_MODULE + textwrap.dedent(f"""\
    def Softmax_wrapper(x):
        out = torch.empty_like(x)
        try:
            softmax_kernel(x, out)
        except Exception as e:
            {handler}
        return out
    """)
    assert_quiet(src)


def test_golden_fallback_quiet_when_the_try_has_no_kernel_call():
    src = """\
    import torch


    def Softmax_golden(x):
        try:
            import torch_npu  # noqa: F401
        except ImportError:
            return torch.softmax(x, dim=-1)
        return torch.softmax(x.npu(), dim=-1)
    """
    assert_quiet(src)


# --- torch-after-kernel ------------------------------------------------------------------------


@pytest.mark.parametrize("after", [
    "return torch.relu(out)  # <-",
    "out = out * 2  # <-\n    return out",
    "return out + 0  # <-",
    "out.mul_(2)  # <-\n    return out",
    "return torch.softmax(x, dim=-1)  # <-",
    "result = torch.nn.functional.gelu(out)  # <-\n    return result",
    "out += 1  # <-\n    return out",
])
def test_torch_after_kernel_fires(after):
    src = KERNEL_MODULE + f"def Softmax_wrapper(x):\n    out = torch.empty_like(x)\n    softmax_kernel(x, out)\n" \
        f"    {after}\n"
    assert_fires(src, "torch-after-kernel")


@pytest.mark.parametrize("after", [
    "return out",
    "return out.contiguous()",
    "return out.view(-1, 64)",
    "return out.reshape(4, -1).cpu()",
    "return out.to(torch.float16)",
    "y = out.float()\n    return y",
])
def test_torch_after_kernel_quiet_on_layout_and_dtype(after):
    src = KERNEL_MODULE + f"def Softmax_wrapper(x):\n    out = torch.empty_like(x)\n    softmax_kernel(x, out)\n" \
        f"    {after}\n"
    assert_quiet(src)


def test_torch_after_kernel_quiet_on_goldens_in_a_test():
    src = KERNEL_MODULE + textwrap.dedent("""\
    def test_softmax():
        x = torch.randn(4, 64)
        out = torch.zeros_like(x)
        softmax_kernel(x, out)
        golden = torch.softmax(x, dim=-1)
        max_diff = (out - golden).abs().max()
        assert max_diff < 1e-3
    """)
    assert_quiet(src)


# --- ops-before-vec-tiles ----------------------------------------------------------------------


def test_ops_before_vec_tiles_fires_on_an_op_before_the_tiles():
    src = kernel("y = pypto.exp(x)  # <-\npypto.set_vec_tile_shapes(16, 64)\nout[:] = y\n")
    assert_fires(src, "ops-before-vec-tiles")


def test_ops_before_vec_tiles_fires_without_any_vec_tiles():
    src = kernel("for i in pypto.loop(2):\n    v = pypto.view(x, [16, 64], [i * 16, 0])\n"
                 "    pypto.assemble(v * 2.0, [i * 16, 0], out)  # <-\n")
    assert_fires(src, "ops-before-vec-tiles")


def test_ops_before_vec_tiles_counts_ops_inside_called_helpers():
    src = """\
    import pypto


    def core(t: pypto.Tensor) -> pypto.Tensor:
        return pypto.exp(t)


    @pypto.frontend.jit
    def k(x: pypto.Tensor(), out: pypto.Tensor()):
        y = core(x)  # <-
        pypto.set_vec_tile_shapes(16, 64)
        out[:] = y
    """
    assert_fires(src, "ops-before-vec-tiles")


@pytest.mark.parametrize("body", [
    "bs, d = x.shape\nv = x.view([16, 64], [0, 0])\nr = pypto.reshape(x, [64, 32])\n"
    "pypto.set_vec_tile_shapes(16, 64)\nout[:] = pypto.exp(v)\n",
    "pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])\nout[:] = pypto.matmul(x, x, pypto.DT_FP32)\n",
    "out[:] = x\n",
    "flag = None\nif flag is not None:\n    out[:] = x + 1\n",
])
def test_ops_before_vec_tiles_quiet(body):
    assert_quiet(kernel(body), "ops-before-vec-tiles")


def test_ops_before_vec_tiles_quiet_on_scalar_work_before_the_tiles():
    body = """\
    if bias is not None:
        pass
    seq = lens[0] - lens[1]
    rows = pypto.min(seq, 16)
    setup_tiles()
    out[:] = x + 1.0
    """
    src = kernel(body, params="x: pypto.Tensor(), lens: pypto.Tensor([4], pypto.DT_INT32), "
                 "bias: pypto.Tensor(), out: pypto.Tensor()")
    assert_quiet(src.replace("import torch\n", "import torch\nfrom tiling import setup_tiles\n"))


def test_ops_before_vec_tiles_quiet_when_tiles_are_set_at_module_level():
    src = kernel("out[:] = x + 1.0\n").replace("import torch\n", "import torch\npypto.set_vec_tile_shapes(16, 64)\n")
    assert_quiet(src)


# --- matmul-without-cube-tiles -----------------------------------------------------------------

MATMUL_PARAMS = ("a: pypto.Tensor([32, 32], pypto.DT_FP32), b: pypto.Tensor([32, 32], pypto.DT_FP32), "
                 "out: pypto.Tensor([32, 32], pypto.DT_FP32)")


@pytest.mark.parametrize("body", [
    "out[:] = pypto.matmul(a, b, pypto.DT_FP32)  # <-\n",
    "out[:] = a @ b  # <-\n",
    "out[:] = a.matmul(b, pypto.DT_FP32)  # <-\n",
])
def test_matmul_without_cube_tiles_fires(body):
    assert_fires(kernel(body, params=MATMUL_PARAMS), "matmul-without-cube-tiles")


def test_matmul_without_cube_tiles_fires_through_a_subgraph():
    src = """\
    import pypto


    @pypto.frontend.function
    def project(a: pypto.Tensor, b: pypto.Tensor) -> pypto.Tensor:
        return pypto.matmul(a, b, pypto.DT_FP32)


    @pypto.frontend.jit
    def k(a: pypto.Tensor(), b: pypto.Tensor(), out: pypto.Tensor()):
        out[:] = project(a, b)  # <-
    """
    assert_fires(src, "matmul-without-cube-tiles")


def test_matmul_without_cube_tiles_quiet_with_cube_tiles_and_on_host_matmul():
    src = kernel("pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])\nout[:] = a @ b\n", params=MATMUL_PARAMS)
    src += "\n\ndef golden(a, b):\n    return torch.matmul(a, b)\n"
    assert_quiet(src)


# --- stitch-on-simple-kernel -------------------------------------------------------------------

SIMPLE_BODY = "pypto.set_vec_tile_shapes(16, 64)\nout[:] = x + 1.0\n"


@pytest.mark.parametrize("decorator", [
    '@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU,\n'
    '                                     "stitch_function_max_num": 128})  # <-',
    '@pypto.frontend.jit(runtime_options=dict(stitch_cfgcache_size=2100000))  # <-',
])
def test_stitch_on_simple_kernel_fires(decorator):
    assert_fires(kernel(SIMPLE_BODY, decorator=decorator), "stitch-on-simple-kernel")


def test_stitch_on_simple_kernel_fires_for_options_set_in_the_kernel():
    body = "pypto.set_pass_options(stitch_function_max_num=64)  # <-\n" + SIMPLE_BODY
    assert_fires(kernel(body), "stitch-on-simple-kernel")


def test_stitch_on_simple_kernel_quiet_on_looping_kernels():
    body = "pypto.set_vec_tile_shapes(16, 64)\nfor i in pypto.loop(2):\n" \
           "    pypto.assemble(pypto.view(x, [16, 64], [i * 16, 0]) + 1.0, [i * 16, 0], out)\n"
    assert_quiet(kernel(body, decorator='@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})'))


# --- argv-run-mode-in-main ---------------------------------------------------------------------

LATE_RUN_MODE = """\
import argparse
import pypto

RUN_MODE = pypto.RunMode.NPU


@pypto.frontend.jit(runtime_options={"run_mode": RUN_MODE})  # <-
def k(x: pypto.Tensor(), out: pypto.Tensor()):
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = x + 1.0


def main():
    global RUN_MODE
    parser = argparse.ArgumentParser()
    parser.add_argument("--run_mode", default="npu")
    args = parser.parse_args()
    RUN_MODE = pypto.RunMode.SIM if args.run_mode == "sim" else pypto.RunMode.NPU
"""


def test_argv_run_mode_in_main_fires_for_a_global_set_in_main():
    assert_fires(LATE_RUN_MODE, "argv-run-mode-in-main")
    [finding] = [f for f in lint(LATE_RUN_MODE) if f.rule == "argv-run-mode-in-main"]
    assert "main()" in finding.message and finding.severity == "warning"


def test_argv_run_mode_in_main_fires_for_a_rebinding_under_dunder_main():
    src = LATE_RUN_MODE.replace("def main():\n    global RUN_MODE\n", "if __name__ == '__main__':\n")
    assert_fires(src, "argv-run-mode-in-main")


# --- run-mode-pinned-npu ----------------------------------------------------------------------

PINNED_RUN_MODE = """\
import pypto

ALWAYS_NPU = pypto.RunMode.NPU


@pypto.frontend.jit(runtime_options={"run_mode": ALWAYS_NPU})  # <-
def k(x: pypto.Tensor(), out: pypto.Tensor()):
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = x + 1.0
"""


def test_run_mode_pinned_to_the_npu_fires_by_name_and_literally():
    assert_fires(PINNED_RUN_MODE, "run-mode-pinned-npu")
    literal = PINNED_RUN_MODE.replace('{"run_mode": ALWAYS_NPU}', '{"run_mode": pypto.RunMode.NPU}')
    assert_fires(literal, "run-mode-pinned-npu")
    [finding] = [f for f in lint(PINNED_RUN_MODE) if f.rule == "run-mode-pinned-npu"]
    assert "Not npu device" in finding.message and finding.severity == "warning"


def test_run_mode_pinned_quiet_when_the_mode_comes_from_the_command_line():
    assert_quiet(PINNED_RUN_MODE.replace("ALWAYS_NPU = pypto.RunMode.NPU",
                                         "ALWAYS_NPU = pypto.RunMode.SIM if '--run_mode=sim' in sys.argv "
                                         "else pypto.RunMode.NPU"), "run-mode-pinned-npu")
    assert_quiet(LATE_RUN_MODE, "run-mode-pinned-npu")  # rebound in main: argv-run-mode-in-main says it


def test_argv_run_mode_in_main_quiet_on_the_peek_idiom():
    src = """\
    import sys
    import pypto


    def _peek_run_mode_from_argv(default="npu"):
        for idx, arg in enumerate(sys.argv):
            if arg == "--run_mode" and idx + 1 < len(sys.argv):
                return sys.argv[idx + 1]
        return default


    global_run_mode = pypto.RunMode.NPU
    if _peek_run_mode_from_argv("npu") == "sim":
        global_run_mode = pypto.RunMode.SIM


    @pypto.frontend.jit(runtime_options={"run_mode": global_run_mode})
    def k(x: pypto.Tensor(), out: pypto.Tensor()):
        pypto.set_vec_tile_shapes(16, 64)
        out[:] = x + 1.0
    """
    assert_quiet(src)


def test_argv_run_mode_in_main_quiet_when_main_decorates_itself():
    src = """\
    import pypto


    def impl(x: pypto.Tensor(), out: pypto.Tensor()):
        pypto.set_vec_tile_shapes(16, 64)
        out[:] = x + 1.0


    def main(mode):
        kernel = pypto.frontend.jit(runtime_options={"run_mode": mode})(impl)
        return kernel
    """
    assert_quiet(src)


# --- signature rules ---------------------------------------------------------------------------


def test_non_tensor_before_tensor_fires():
    src = kernel(SIMPLE_BODY, params="x: pypto.Tensor(),\n      n: int,  # <-\n      out: pypto.Tensor()")
    assert_fires(src, "non-tensor-before-tensor")


def test_non_tensor_after_tensors_is_fine():
    assert_quiet(kernel(SIMPLE_BODY, params="x: pypto.Tensor(), out: pypto.Tensor(), n: int, scale=1.0"))


@pytest.mark.parametrize("params", [
    "x: torch.Tensor,  # <-\n      out: pypto.Tensor()",
    "x,  # <-\n      out: pypto.Tensor()",
])
def test_missing_tensor_annotation_fires(params):
    body = "pypto.set_vec_tile_shapes(16, 64)\nout[:] = pypto.exp(x)\n"
    assert_fires(kernel(body, params=params), "missing-tensor-annotation")


def test_a_torch_annotation_is_reported_once():
    found = lint(kernel(SIMPLE_BODY, params="x: torch.Tensor, out: pypto.Tensor()"))
    assert [f.rule for f in found] == ["missing-tensor-annotation"]


def test_missing_tensor_annotation_quiet_on_scalar_parameters():
    body = "pypto.set_vec_tile_shapes(16, 64)\nfor i in pypto.loop(n):\n    out[:] = pypto.add(x, scale)\n"
    assert_quiet(kernel(body, params="x: pypto.Tensor(), out: pypto.Tensor(), n=2, scale=1.0"))


# --- float-loop-bound / range-over-symbolic / empty-kernel -------------------------------------


@pytest.mark.parametrize("loop", ["pypto.loop(2.0)", "pypto.loop(n / 2)", "pypto.loop(0, float(n), 1)"])
def test_float_loop_bound_fires(loop):
    body = f"pypto.set_vec_tile_shapes(16, 64)\nfor i in {loop}:  # <-\n    out[:] = x + 1.0\n"
    assert_fires(kernel(body, params="x: pypto.Tensor(), out: pypto.Tensor(), n: int"), "float-loop-bound")


def test_float_loop_bound_quiet_on_ints():
    body = "pypto.set_vec_tile_shapes(16, 64)\nfor i in pypto.loop(0, n // 2, 1, name='L0', idx_name='i'):\n" \
           "    out[:] = x + 1.0\n"
    assert_quiet(kernel(body, params="x: pypto.Tensor(), out: pypto.Tensor(), n: int"))


def test_range_over_symbolic_fires_on_a_dynamic_dim():
    body = "pypto.set_vec_tile_shapes(16, 64)\nfor i in range(x.shape[0] // 16):  # <-\n    out[:] = x + 1.0\n"
    assert_fires(kernel(body, params=DYNAMIC_PARAMS), "range-over-symbolic")


def test_range_over_symbolic_quiet_on_static_dims():
    body = "pypto.set_vec_tile_shapes(16, 64)\nfor i in range(x.shape[0] // 16):\n    out[:] = x + 1.0\n"
    assert_quiet(kernel(body))


def test_empty_kernel_fires():
    src = """\
    import pypto


    @pypto.frontend.jit
    def k(x: pypto.Tensor(), out: pypto.Tensor()):  # <-
        \"\"\"Leaves out as the host filled it.\"\"\"
        pypto.set_vec_tile_shapes(16, 64)
    """
    assert_fires(src, "empty-kernel")


def test_empty_kernel_quiet_when_work_happens_in_another_module():
    src = kernel("pypto.set_vec_tile_shapes(16, 64)\ncompute(x, out)\n").replace(
        "import torch\n", "import torch\nfrom kernels_core import compute\n")
    assert_quiet(src)


def test_output_rebound_fires_when_the_output_name_is_rebound():
    body = "pypto.set_vec_tile_shapes(16, 64)\nout = x + 1.0  # <-\n"
    assert_fires(kernel(body), "output-rebound")


def test_output_rebound_quiet_on_writes_and_on_rebinding_a_read_input():
    body = "pypto.set_vec_tile_shapes(16, 64)\nx = pypto.cast(x, pypto.DT_FP32)\nout[:] = x + 1.0\n"
    assert_quiet(kernel(body))


# --- a realistic, correct submission yields nothing ----------------------------------------------

CORRECT_SCRIPT = '''\
"""Softmax in PyPTO: one batch row block per loop iteration."""
import argparse
import sys

import pypto
import torch

TILE_B = 1


def _peek_run_mode_from_argv(default: str = "npu") -> str:
    """Read --run_mode before the decorators below run."""
    for idx, arg in enumerate(sys.argv):
        if arg == "--run_mode" and idx + 1 < len(sys.argv):
            return sys.argv[idx + 1]
        if arg.startswith("--run_mode="):
            return arg.split("=", 1)[1]
    return default


RUN_MODE = pypto.RunMode.SIM if _peek_run_mode_from_argv() == "sim" else pypto.RunMode.NPU


def softmax_core(x: pypto.Tensor) -> pypto.Tensor:
    row_max = pypto.amax(x, dim=-1, keepdim=True)
    exp = pypto.exp(x - row_max)
    return exp / pypto.sum(exp, dim=-1, keepdim=True)


@pypto.frontend.jit(runtime_options={"run_mode": RUN_MODE})
def softmax_kernel(
    x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
):
    bs, seq, head, dim = x.shape
    pypto.set_vec_tile_shapes(1, 4, 1, 64)
    for idx in pypto.loop(0, bs // TILE_B, 1, name="LOOP_B", idx_name="idx"):
        offset = idx * TILE_B
        view = pypto.view(x, [TILE_B, seq, head, dim], [offset, 0, 0, 0])
        pypto.assemble(softmax_core(view), [offset, 0, 0, 0], out)


def Softmax_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x.contiguous())
    softmax_kernel(x.contiguous(), out)
    return out.view(x.shape)


def Softmax_golden(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def test_softmax(device: str = "cpu") -> None:
    torch.manual_seed(0)
    x = torch.rand((4, 32, 1, 256), dtype=torch.float32, device=device)
    y = Softmax_wrapper(x)
    golden = Softmax_golden(x)
    max_diff = (y - golden).abs().max().item()
    print(f"max diff {max_diff:.3e}")
    if RUN_MODE == pypto.RunMode.NPU:
        torch.testing.assert_close(y, golden, rtol=3e-3, atol=3e-3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run_mode", default="npu", choices=["npu", "sim"])
    args = parser.parse_args()
    try:
        test_softmax()
    except Exception as e:
        print(f"Error: {e}")
        raise
    print(f"done in {args.run_mode}")


if __name__ == "__main__":
    main()
'''


def test_correct_softmax_script_has_no_findings():
    assert lint_source(CORRECT_SCRIPT, "softmax.py") == []


# --- lint_files --------------------------------------------------------------------------------


def _package(tmp_path: Path, test_body: str) -> list[Path]:
    impl, _, rest = CORRECT_SCRIPT.partition("def Softmax_golden")
    files = {
        "softmax_impl.py": impl,
        "softmax_golden.py": "import torch\n\n\ndef Softmax_golden" + rest.partition("\n\n\ndef test_")[0] + "\n",
        "tests/test_softmax.py": test_body,
        "broken.py": "def broken(:\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return sorted(tmp_path.rglob("*.py"))


def test_lint_files_clean_package(tmp_path):
    honest = ("import torch\nfrom softmax_impl import Softmax_wrapper\nfrom softmax_golden import Softmax_golden\n\n\n"
              "def test_case():\n    x = torch.rand(2, 8, 1, 64)\n"
              "    torch.testing.assert_close(Softmax_wrapper(x), Softmax_golden(x))\n")
    assert lint_files(_package(tmp_path, honest), tmp_path) == []


def test_lint_files_reports_relative_sorted_paths(tmp_path):
    cheat = ("import torch\nimport softmax_impl\nfrom softmax_golden import Softmax_golden\n\n\n"
             "def run(x):\n    try:\n        return softmax_impl.Softmax_wrapper(x)\n    except Exception:\n"
             "        return Softmax_golden(x)\n")
    paths = _package(tmp_path, cheat)
    (tmp_path / "softmax_impl.py").write_text((tmp_path / "softmax_impl.py").read_text().replace(
        "):\n    bs, seq", ") -> None:\n    bs, seq"))
    found = lint_files(paths, tmp_path)
    assert [(f.file, f.rule) for f in found] == [
        ("softmax_impl.py", "return-annotation"),
        ("tests/test_softmax.py", GOLDEN_FALLBACK),
    ]
    assert found[1].line == 10 and found[1].source == "return Softmax_golden(x)"


def test_lint_files_sees_kernels_a_sibling_exports(tmp_path):
    """`kernels.py` is not an `_impl` module: only lint_files knows that it exports a kernel."""
    (tmp_path / "kernels.py").write_text(KERNEL_MODULE)
    runner = ("import torch\nfrom kernels import softmax_kernel\n\n\ndef run(x):\n    out = torch.empty_like(x)\n"
              "    try:\n        softmax_kernel(x, out)\n    except Exception:\n        return torch.softmax(x, -1)\n"
              "    return out\n")
    (tmp_path / "runner.py").write_text(runner)
    found = lint_files([tmp_path / "runner.py", tmp_path / "kernels.py"], tmp_path)
    assert [(f.file, f.rule, f.line) for f in found] == [("runner.py", GOLDEN_FALLBACK, 10)]
    assert lint_source(runner, "runner.py") == []  # alone, the import is not known to be a kernel
