"""Vec tiles against the dims they tile: SIM accepts tiles that do not divide a dim, the NPU launch fails
with 107003 (docs/pypto.md §9).

`check_tiles` compares constant tiles with the constant dims of the kernel's tensor parameters of the same rank
(a tensor is flagged when no tile set of its rank divides it).
`plans` gives each kernel's constant tiles, so that the judge can compare them with the shapes a launch
actually got (dims the source leaves DYNAMIC or unannotated). A kernel that uses valid_shape handles its
tails itself and is left alone by both.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from runtime.lint.module import Kernel, Module, own_nodes, params
from runtime.lint.rules import Findings
from runtime.lint.shapes import is_tensor_annotation

RULE = "vec-tiles-not-dividing"


@dataclass(frozen=True)
class TilePlan:
    """Constant vec tiles a kernel sets, and where."""

    file: str
    line: int
    tiles: tuple[int, ...]


def constant_tiles(m: Module, kernel: Kernel) -> list[tuple[int, tuple[int, ...]]]:
    """(line, tiles) of each set_vec_tile_shapes given positive int constants; none if the kernel uses valid_shape."""
    nodes = list(own_nodes(kernel.fn.body))
    if any(isinstance(n, ast.keyword) and n.arg == "valid_shape" for n in nodes):
        return []
    found = []
    for call in (n for n in nodes if isinstance(n, ast.Call) and m.pypto_name(n.func) == "set_vec_tile_shapes"):
        first = call.args[0] if len(call.args) == 1 else None  # set_vec_tile_shapes([16, 64]) or (16, 64)
        values = [_int(m, a) for a in (first.elts if isinstance(first, ast.List | ast.Tuple) else call.args)]
        if values and all(v is not None and v > 0 for v in values):
            found.append((call.lineno, tuple(v for v in values if v is not None)))
    return found


def not_dividing(shape: list[int | None], tiles: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(dim, size, tile) for each known dim of `shape` its tile does not divide; [] for another rank."""
    if len(shape) != len(tiles):
        return []
    return [(i, d, t) for i, (d, t) in enumerate(zip(shape, tiles)) if d is not None and d % t]


def describe(bad: list[tuple[int, int, int]]) -> str:
    """'tile 8 on dim 0 of size 1, ...'"""
    return ", ".join(f"tile {t} on dim {i} of size {d}" for i, d, t in bad)


def untiled(shape: list[int | None], sets: list[tuple[int, tuple[int, ...]]]) -> tuple[int, tuple[int, ...],
                                                                                  list[tuple[int, int, int]]] | None:
    """(line, tiles, bad dims) of the first of `sets` when none of those of the shape's rank divides it.

    A kernel that sets tiles more than once may tile this tensor with any of them: one that divides it clears it."""
    fits = [(line, tiles, not_dividing(shape, tiles)) for line, tiles in sets if len(tiles) == len(shape)]
    return fits[0] if fits and all(bad for _, _, bad in fits) else None


def check_tiles(m: Module, f: Findings, kernel: Kernel) -> None:
    """A warning where no constant tiles of its rank divide the constant dims of a tensor parameter."""
    sets = constant_tiles(m, kernel)
    by_line: dict[int, tuple[tuple[int, ...], set[tuple[int, int, int]]]] = {}
    for p in params(kernel.fn):
        found = untiled(_constant_dims(m, p.annotation), sets) if is_tensor_annotation(m, p.annotation) else None
        if found is not None:
            by_line.setdefault(found[0], (found[1], set()))[1].update(found[2])
    for line, (tiles, bad_dims) in sorted(by_line.items()):
        bad = sorted(bad_dims)
        if bad:
            f.add(RULE, line,
                  f"Kernel '{kernel.fn.name}' sets vec tiles {list(tiles)} that do not divide the dims they tile "
                  f"({describe(bad)}): SIM accepts it, the NPU launch fails ('launch aicpu failed: 107003'). "
                  "Choose tiles that divide each dim (at most the dim), or handle the tail with "
                  "pypto.view(..., valid_shape=...).",
                  subject=describe(bad))


def _constant_dims(m: Module, ann: ast.expr | None) -> list[int | None]:
    """The dims a pypto.Tensor([...], ...) annotation fixes (None: DYNAMIC or unknown); [] when it gives no list."""
    shape = ann.args[0] if isinstance(ann, ast.Call) and ann.args else None
    if isinstance(shape, ast.Name):
        shape = m.constants.get(shape.id, shape)
    return [_int(m, d) for d in shape.elts] if isinstance(shape, ast.List | ast.Tuple) else []


def _int(m: Module, node: ast.expr) -> int | None:
    if isinstance(node, ast.Name):
        node = m.constants.get(node.id, node)
    value = node.value if isinstance(node, ast.Constant) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
