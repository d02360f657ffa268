"""Which tensor dims are DYNAMIC, read from pypto.Tensor annotations.

pypto 0.2.0 makes a dim symbolic only when the annotation marks it pypto.DYNAMIC / pypto.DYN or gives a
SymbolicScalar (`pypto.frontend.dynamic(...)`); ints, pypto.STATIC, `...` and a bare `pypto.Tensor()` take
concrete sizes from the input (see `_convert_tensors_with_metadata` in pypto/frontend/parser/entry.py).
Measured in SIM: `set_vec_tile_shapes(x.shape[0] // 2, 16)` compiles for a [32, 32] annotation and fails
with 'Not concrete value' for [DYNAMIC, 32]; `range(x.shape[0])` behaves the same way.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from runtime.lint.module import Module

DYNAMIC_MARKS = frozenset({"DYNAMIC", "DYN"})
SYMBOLIC_FACTORIES = frozenset({"frontend.dynamic", "SymbolicScalar", "symbolic_scalar.SymbolicScalar"})


@dataclass(frozen=True)
class Spec:
    """The DYNAMIC dims of a tensor, by index, and its rank when the annotation fixes it."""

    dynamic: frozenset[int]
    rank: int | None

    def is_dynamic(self, index: int) -> bool:
        """Whether dim `index` (negative counts from the end) is symbolic."""
        if index < 0:
            if self.rank is None:  # only leading dims can be marked before a `...`
                return False
            index += self.rank
        return index in self.dynamic

    def any_dynamic(self, start: int = 0) -> bool:
        """Whether any dim from `start` on is symbolic."""
        return any(i >= start for i in self.dynamic)


STATIC = Spec(frozenset(), None)


@dataclass(frozen=True)
class ShapeRef:
    """`x.shape[offset:]` of a tensor with spec `spec`."""

    spec: Spec
    offset: int = 0

    def dim_is_dynamic(self, index: int) -> bool:
        """Whether element `index` of this (sliced) shape is symbolic."""
        return self.spec.is_dynamic(index if index < 0 else self.offset + index)

    def any_dynamic(self) -> bool:
        """Whether any element of this (sliced) shape is symbolic."""
        return self.spec.any_dynamic(self.offset)


def is_tensor_annotation(m: Module, ann: ast.expr | None) -> bool:
    """`pypto.Tensor`, `pypto.Tensor(...)`, `pypto.Tensor[...]` (any alias, `tensor` too)."""
    if isinstance(ann, ast.Call):
        ann = ann.func
    elif isinstance(ann, ast.Subscript):
        ann = ann.value
    return ann is not None and m.pypto_name(ann) in ("Tensor", "tensor")


def annotation_spec(m: Module, ann: ast.expr) -> Spec:
    """The spec a pypto.Tensor annotation declares; unknown shapes count as static."""
    shape: ast.expr | None = None
    if isinstance(ann, ast.Call):
        shape = ann.args[0] if ann.args else next((k.value for k in ann.keywords if k.arg == "shape"), None)
    elif isinstance(ann, ast.Subscript):
        shape = ann.slice.elts[0] if isinstance(ann.slice, ast.Tuple) and ann.slice.elts else ann.slice
    if isinstance(shape, ast.Name):
        shape = m.constants.get(shape.id, shape)
    if not isinstance(shape, ast.List | ast.Tuple):
        return STATIC
    dynamic: set[int] = set()
    for i, dim in enumerate(shape.elts):
        if isinstance(dim, ast.Constant) and dim.value is Ellipsis:
            return Spec(frozenset(dynamic), None)
        if _is_dynamic_dim(m, dim):
            dynamic.add(i)
    return Spec(frozenset(dynamic), len(shape.elts))


def _is_dynamic_dim(m: Module, dim: ast.expr) -> bool:
    if isinstance(dim, ast.Name) and m.pypto_name(dim) is None:
        dim = m.constants.get(dim.id, dim)  # BS = pypto.frontend.dynamic("bs")
    if isinstance(dim, ast.Call):
        return m.pypto_name(dim.func) in SYMBOLIC_FACTORIES
    name = m.pypto_name(dim)
    return name is not None and name.rpartition(".")[2] in DYNAMIC_MARKS
