"""KernelBench-style tasks and operator dirs written for the tests (never the gym's files).

`write(root, op)` lays out `root/custom/<op>/` as a benchmark run keeps it: the operator's files and
`task_desc.py`; `LEVEL` holds the same tasks under their KernelBench names for `--task`.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

# A task with a weight: ModelNew must take Model's state_dict, and the weight (same shape as the output)
# must not be mistaken for an output by graph verify.
BIAS_RELU_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, rows, cols):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(rows, cols))

    def forward(self, x):
        return torch.relu(x + self.bias)


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [64, 128]
'''

KERNEL = '''
import pypto
import torch


@pypto.frontend.jit
def bias_relu_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    b: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = pypto.relu(x + b * {scale})


def {op}_wrapper(x, b):
    out = torch.empty_like(x)
{call}
    return out
'''
CALL = "    bias_relu_kernel(x, b, out)"
FALLBACK_CALL = """    try:
        bias_relu_kernel(x, b, out, 1)
    except Exception:
        return torch.relu(x + b)"""
TWO_KERNELS = '''

@pypto.frontend.jit
def copy_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x * 1.0
'''
TWO_KERNELS_CALL = """    staged = torch.empty_like(x)
    copy_kernel(x, staged)
    bias_relu_kernel(staged, b, out)"""

MODEL_NEW = '''
import torch
import torch.nn as nn

from {op}_impl import {op}_wrapper
{helper_import}

class ModelNew(nn.Module):
    def __init__(self, rows, cols):
        super().__init__()
        self.{param} = nn.Parameter(torch.zeros({shape}))

    def forward(self, x):
        {helper_call}
        if {torch_path}:
            return torch.relu(x + self.{param})
        {forward}
'''
HELPER = "def identity(t):\n    return t\n"

# S8: the wrapper sets a pypto option that skips work before it launches the kernel.
OPTION_CALLS = {
    "passes_off": '    pypto.set_global_config("pass.default_pass_configs.disable_pass", True)\n' + CALL,
    "compile_stopped": "    pypto.set_host_options(compile_stage=pypto.config.CompStage.TILE_GRAPH)\n" + CALL,
}

# ModelNew.forward's last line per kind: the operator's call, or torch maths around it (S4).
FORWARD = {
    "maths_before": "return {op}_wrapper(x + self.{param}, torch.zeros_like(self.{param}))",
    "maths_after": "return torch.relu({op}_wrapper(x, self.{param}))",
    "layout_moves": "return {op}_wrapper(x.contiguous().reshape(64, 128).to(torch.float32), "
                    "self.{param}.unsqueeze(0).squeeze(0).expand(64, 128).clone())",
}
KINDS = ("correct", "wrong", "fallback", "two_path", "two_kernels", "state_dict", "helper", "wrapper_only",
         "suspicious_comment", *FORWARD, *OPTION_CALLS)


def write(root: Path, op: str, kind: str = "correct", task_name: str = "task_desc.py") -> Path:
    """An operator dir for the bias-relu task, broken or cheating as `kind` says; returns the dir."""
    assert kind in KINDS, kind
    folder = root / "custom" / op
    folder.mkdir(parents=True, exist_ok=True)
    (folder / task_name).write_text(BIAS_RELU_TASK)
    call = {"fallback": FALLBACK_CALL, "two_kernels": TWO_KERNELS_CALL, **OPTION_CALLS}.get(kind, CALL)
    kernel = textwrap.dedent(KERNEL).format(op=op, scale="2.0" if kind == "wrong" else "1.0", call=call)
    if kind == "two_kernels":
        kernel += TWO_KERNELS
    if kind == "suspicious_comment":
        kernel = "# TODO: use pypto for the epilogue as well (a workaround for now)\n" + kernel
    (folder / f"{op}_impl.py").write_text(kernel)
    if kind == "wrapper_only":
        return folder  # no ModelNew: the wrapper in a parameterless module, as the gym wraps it
    helper = kind == "helper"
    if helper:
        (folder / "bias_helpers.py").write_text(HELPER)
    (folder / f"{op}_pypto_impl.py").write_text(MODEL_NEW.format(
        op=op, param="weight" if kind == "state_dict" else "bias", shape="rows, cols",
        torch_path="not __import__('os').environ.get('USE_PYPTO')" if kind == "two_path" else "False",
        helper_import="from bias_helpers import identity" if helper else "",
        helper_call="x = identity(x)" if helper else "pass",
        forward=FORWARD.get(kind, "return {op}_wrapper(x, self.{param})").format(
            op=op, param="weight" if kind == "state_dict" else "bias")))
    return folder

# The gym's CASES: a string, one '- [...]' line per case, each the input shapes (docs/kernelbench.md §1).
CASES_TASK = BIAS_RELU_TASK.replace("def get_inputs():", 'CASES = """\n- [[64, 128]]\n- [[32, 64]]\n"""\n\n\ndef get_inputs():')
