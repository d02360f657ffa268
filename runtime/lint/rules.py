"""Rule ids, their one-line descriptions and severities, and the collector the checks write to."""
from __future__ import annotations

from runtime.report import LintFinding

GOLDEN_FALLBACK = "golden-fallback"
API_MISSING = "pypto-api-missing"
CALL_MISMATCH = "pypto-call-mismatch"
RETURN_ANNOTATION = "return-annotation"
# Findings that say the kernel was written for another pypto (docs/versions.md §1), not that it is wrong.
# A return annotation is not one: every pypto from r0.2.0 on refuses it (docs/pypto.md §9).
VERSION_SKEW_RULES = frozenset({API_MISSING, CALL_MISMATCH})

RULES: dict[str, str] = {
    RETURN_ANNOTATION: "A jit function has a return annotation, which every pypto from r0.2.0 on rejects.",
    API_MISSING: "The code uses a pypto name the installed pypto does not have (written for another pypto).",
    CALL_MISMATCH: "A pypto call passes arguments the installed pypto's signature does not take "
    "(written for another pypto).",
    "future-annotations": "`from __future__ import annotations` in a file with jit functions turns the "
    "pypto.Tensor annotations into strings.",
    "non-tensor-before-tensor": "A jit function declares a non-tensor parameter before a tensor parameter.",
    "missing-tensor-annotation": "A jit function parameter used as a tensor is not annotated with pypto.Tensor.",
    "tensor-iteration": "Kernel code iterates or unpacks a tensor (list(t) hangs pypto 0.2.0 forever).",
    "symbolic-tile-shape": "Tile shapes are computed from tensor shapes or loop indices, which are not "
    "concrete for DYNAMIC dims.",
    "range-over-symbolic": "Kernel code calls Python range() over a tensor shape instead of pypto.loop.",
    "float-loop-bound": "pypto.loop gets a float or numpy bound instead of a Python int.",
    "ops-before-vec-tiles": "A kernel runs vector ops before (or without) pypto.set_vec_tile_shapes (F21004).",
    "matmul-without-cube-tiles": "A kernel calls matmul without pypto.set_cube_tile_shapes (FC4000 kL0=0).",
    "view-rank-mismatch": "A pypto.view gets shape, offsets or valid_shape lists of different lengths (F21004).",
    "vec-tiles-not-dividing": "Vec tile shapes that do not divide the dims they tile: SIM accepts them, the NPU "
    "launch fails (107003).",
    "stitch-on-simple-kernel": "stitch_* options on a kernel with no pypto.loop and no matmul "
    "(NPU 'launch aicpu failed: 107003').",
    "empty-kernel": "A jit function computes and writes nothing, so its outputs keep what the host put there.",
    "output-rebound": "A jit function rebinds a tensor parameter (`out = ...`) before using it, so the caller's "
    "tensor is never written.",
    GOLDEN_FALLBACK: "An except handler around the kernel returns the golden, a torch result or an input.",
    "torch-after-kernel": "Host code applies torch maths to the kernel's output on the way to the result.",
    "argv-run-mode-in-main": "The jit decorator reads a run mode that is only set after import (in main).",
    "run-mode-pinned-npu": "The jit decorator pins run_mode to the NPU, whatever mode the test is run in.",
}

SEVERITY: dict[str, str] = {
    RETURN_ANNOTATION: "error",
    API_MISSING: "error",
    CALL_MISMATCH: "warning",
    "future-annotations": "error",
    "non-tensor-before-tensor": "error",
    "missing-tensor-annotation": "error",
    "tensor-iteration": "error",
    "symbolic-tile-shape": "warning",
    "range-over-symbolic": "warning",
    "float-loop-bound": "error",
    "ops-before-vec-tiles": "error",
    "matmul-without-cube-tiles": "error",
    "view-rank-mismatch": "error",
    "vec-tiles-not-dividing": "warning",
    "stitch-on-simple-kernel": "warning",
    "empty-kernel": "warning",
    "output-rebound": "error",
    GOLDEN_FALLBACK: "error",
    "torch-after-kernel": "warning",
    "argv-run-mode-in-main": "warning",
    "run-mode-pinned-npu": "warning",
}


class Findings:
    """Collects one file's findings; the same (rule, line, message) is kept once."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self._lines = text.splitlines()
        self._found: dict[tuple[str, int, str], LintFinding] = {}

    def add(self, rule: str, line: int, message: str, subject: str = "") -> None:
        """Record a finding of `rule` at `line` (1-based), about `subject` when it names one."""
        source = self._lines[line - 1].strip() if 0 < line <= len(self._lines) else ""
        finding = LintFinding(rule, SEVERITY[rule], self.file, line, message, source, subject)
        self._found.setdefault((rule, line, message), finding)

    def sorted(self) -> list[LintFinding]:
        """All findings, by line then rule."""
        return sorted(self._found.values(), key=lambda f: (f.line, f.rule))
