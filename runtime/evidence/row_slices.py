"""Graph verify on row slices, for launches whose tensor graph the calculator cannot hold (docs/pypto.md §10).

pypto 0.2.0's calculator keeps about GRAPH_BYTES_FACTOR x the launch's tensor bytes per loop iteration
until the call returns, so its memory grows with rows squared at a fixed row tile: a `[1, 4096, 3072]`
fp16 rms_norm walked 8 rows at a time needs about 65 GiB. When the kernel's own loop makes its rows
independent, the same kernel launched on row slices computes the same rows; each slice's graph fits.

Independence is read from the kernel's source, conservatively: one `pypto.loop` over
`<arg>.shape[d] // T`, every `pypto.view` and `pypto.assemble` inside it offset by `i * T` in dim `d` only
(and by no loop index elsewhere), nothing else looping, branching or reading the sliced tensors whole.
Anything else is not sliced.

A package's sliced launch launches only some slices when time is short (runtime.evidence.slice_sample); its outputs
are then compared on the rows launched only (`coverage`, `compare`), and the report names those rows.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from runtime.intake import python_ast
from runtime.evidence.slice_sample import sample, spans

# Measured (docs/pypto.md §10, bench/graph_verify_memory.py --plain): graph verify's memory over plain SIM's, per
# loop iteration, is about 2.65 x the bytes of the launch's tensors (x, gamma and out of an fp16 rms_norm).
GRAPH_BYTES_FACTOR = 2.65


@dataclass(frozen=True)
class RowLoop:
    """What the kernel's source proves: dim `dim` is walked `tile` rows per iteration, rows independent."""
    dim: int
    tile: int
    sliced: tuple[str, ...]  # the parameters viewed or assembled per iteration


def _pypto_call(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "pypto")


def _int(node: ast.AST, env: dict[str, Any]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and isinstance(env.get(node.id), int):
        return int(env[node.id])
    return None


def _shape_dim(node: ast.AST, params: list[str]) -> tuple[str, int] | None:
    """`p.shape[d]` of a parameter p."""
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
            and isinstance(node.value.value, ast.Name) and node.value.value.id in params
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)):
        return node.value.value.id, node.slice.value
    return None


def _uses(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _row_offset(offsets: ast.AST, var: str, dim: int, tile: int, env: dict[str, Any]) -> bool:
    """Offsets `[.., var * tile (at dim), ..]` with the loop index nowhere else."""
    if not isinstance(offsets, ast.List) or len(offsets.elts) <= dim:
        return False
    at = offsets.elts[dim]
    if not (isinstance(at, ast.BinOp) and isinstance(at.op, ast.Mult)):
        return False
    pair = [(at.left, at.right), (at.right, at.left)]
    if not any(isinstance(a, ast.Name) and a.id == var and _int(b, env) == tile for a, b in pair):
        return False
    return not any(_uses(e, var) for i, e in enumerate(offsets.elts) if i != dim)


def _setup(stmt: ast.stmt) -> bool:
    """A statement outside the loop that computes nothing from the tensors: a docstring, `pypto.set_*(...)`,
    or a name bound without a pypto call (`hidden = x.shape[2]`)."""
    if isinstance(stmt, ast.Expr):
        value = stmt.value
        return (isinstance(value, ast.Constant) or isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr.startswith("set_"))
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, ast.Name) for t in stmt.targets) and not any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) for n in ast.walk(stmt.value))
    return False


def _loop(fn: Any) -> tuple[ast.For, list[ast.stmt], list[str], dict[str, Any]] | None:
    try:
        tree = python_ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    func = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
    if func is None:
        return None
    loops = [s for s in func.body if isinstance(s, ast.For)]
    rest = [s for s in func.body if not isinstance(s, ast.For)]
    if len(loops) != 1 or not all(_setup(s) for s in rest):
        return None
    if any(isinstance(n, (ast.For, ast.While, ast.If, ast.IfExp, ast.Return)) for s in loops[0].body
           for n in ast.walk(s)):
        return None
    return loops[0], rest, [a.arg for a in func.args.args], dict(getattr(fn, "__globals__", {}))


def row_loop(fn: Any) -> RowLoop | None:
    """The row loop that makes the kernel's rows independent, or None when its source does not prove one."""
    found = _loop(fn)
    if found is None:
        return None
    loop, rest, params, env = found
    walk = loop.iter
    count = walk.args[0] if isinstance(walk, ast.Call) and _pypto_call(walk, "loop") and walk.args else None
    if not isinstance(loop.target, ast.Name) or not (isinstance(count, ast.BinOp)
                                                     and isinstance(count.op, ast.FloorDiv)):
        return None
    walked, tile = _shape_dim(count.left, params), _int(count.right, env)
    if walked is None or not tile or tile <= 0:
        return None
    var, dim = loop.target.id, walked[1]
    if any(shape is not None and shape[1] == dim for stmt in rest for shape in map(lambda n: _shape_dim(n, params),
                                                                                  ast.walk(stmt))):
        return None  # the walked size bound outside the loop (`n = x.shape[1]`): a slice would change it
    sliced: set[str] = set()
    allowed: set[int] = set()  # the Name nodes of sliced tensors in their view/assemble slot
    for node in (n for s in loop.body for n in ast.walk(s)):
        for name, (src, offsets) in (("view", (0, 2)), ("assemble", (2, 1))):
            if not _pypto_call(node, name):
                continue
            args = node.args  # type: ignore[attr-defined]
            if len(args) <= max(src, offsets) or not isinstance(args[src], ast.Name) or args[src].id not in params:
                return None
            if not _row_offset(args[offsets], var, dim, tile, env):
                return None
            if name == "view" and not (isinstance(args[1], ast.List) and len(args[1].elts) > dim
                                       and _int(args[1].elts[dim], env) == tile):
                return None  # a view of other than one tile of rows
            sliced.add(args[src].id)
            allowed.add(id(args[src]))
    body = [n for s in loop.body for n in ast.walk(s)]
    for node in body:  # `x.shape[k]` of another dim reads no rows
        other = _shape_dim(node, params)
        if other is not None and other[1] != dim:
            allowed.add(id(node.value.value))  # type: ignore[attr-defined]
    for node in body:
        if isinstance(node, ast.Name) and node.id in sliced and id(node) not in allowed:
            return None  # a sliced tensor read whole inside the loop
        if isinstance(node, ast.Name) and node.id == var and not _in_offsets(node, loop):
            return None
        shape = _shape_dim(node, params)
        if shape is not None and shape[1] == dim:
            return None  # the walked size itself read inside the loop: a slice would change it
    if walked[0] not in sliced or not sliced:
        return None
    return RowLoop(dim, tile, tuple(sorted(sliced)))


def _in_offsets(name: ast.Name, loop: ast.For) -> bool:
    """Whether this use of the loop index sits in the offsets of a view or an assemble (already checked)."""
    for node in (n for s in loop.body for n in ast.walk(s)):
        for call, slot in (("view", 2), ("assemble", 1)):
            if _pypto_call(node, call) and len(node.args) > slot and any(  # type: ignore[attr-defined]
                    n is name for n in ast.walk(node.args[slot])):  # type: ignore[attr-defined]
                return True
    return False


def rows_per_slice(rows: int, tile: int, launch_bytes: int, budget_bytes: int) -> int | None:
    """The rows of each slice that keep the graph's predicted memory within budget, or None when the whole
    launch fits (or no slice size divides the rows in whole tiles)."""
    def cost(r: int) -> float:
        return GRAPH_BYTES_FACTOR * launch_bytes * (r / rows) * (r / tile)

    if rows % tile or cost(rows) <= budget_bytes:
        return None
    fitting = [r for r in range(tile, rows, tile) if rows % r == 0 and cost(r) <= budget_bytes]
    return max(fitting) if fitting else tile


@dataclass
class Plan:
    dim: int
    rows: int  # per slice
    total: int  # the launch's rows in dim `dim`
    starts: list[int]  # the first row of each slice, in the order they are launched
    chunks: list[tuple[list[Any], list[Any]]]  # per slice: the launch's arguments and the goldens

    @property
    def slices(self) -> int:
        return self.total // self.rows

    def verified(self, launched: int) -> list[list[int]]:
        """The row ranges [start, stop) of the first `launched` slices, adjacent ones merged."""
        return spans([start // self.rows for start in self.starts[:launched]], self.rows)


def plan(wrapper: Any, args: tuple[Any, ...], goldens: list[Any], budget_bytes: int,
         count: int | None = None, seed: int = 0) -> Plan | None:
    """Row slices for this launch when its predicted graph memory exceeds the budget and the kernel's loop
    makes its rows independent, in `sample`'s order (at most `count`); None to launch it whole."""
    import torch

    loop = row_loop(getattr(wrapper, "_original_func", None)) if budget_bytes > 0 else None
    if loop is None:
        return None
    code = wrapper._original_func.__code__
    names = list(code.co_varnames[: code.co_argcount])
    tensors = {n: a for n, a in zip(names, args) if isinstance(a, torch.Tensor)}
    if not all(n in tensors for n in loop.sliced):
        return None
    lead = tuple(tensors[loop.sliced[0]].shape[: loop.dim + 1])
    if any(tuple(tensors[n].shape[: loop.dim + 1]) != lead for n in loop.sliced) or any(s != 1 for s in lead[:-1]):
        return None  # slices of other than the outermost walked dim would not be contiguous
    if any(n not in loop.sliced and tuple(t.shape[: loop.dim + 1]) == lead for n, t in tensors.items()):
        return None  # a tensor of the same rows used whole (`out[:] = ...`) would see only its slice's rows
    launch_bytes = sum(t.numel() * t.element_size() for t in tensors.values())
    rows = rows_per_slice(lead[-1], loop.tile, launch_bytes, budget_bytes)
    if rows is None:
        return None

    def part(t: Any, start: int) -> Any:
        return t.narrow(loop.dim, start, rows) if tuple(t.shape[: loop.dim + 1]) == lead else t

    starts = [k * rows for k in sample(lead[-1] // rows, count, seed)]
    chunks = [([part(a, start) if n in loop.sliced else a for n, a in zip(names, args)] + list(args[len(names):]),
               [part(g, start) for g in goldens]) for start in starts]
    return Plan(loop.dim, rows, lead[-1], starts, chunks)


def pick(t: Any, dim: int, ranges: list[list[int]]) -> Any:
    """The rows `ranges` of `t` in dim `dim`, in order (what a partly verified output is compared on)."""
    import torch

    return torch.cat([t.narrow(dim, start, stop - start) for start, stop in ranges], dim)


def coverage(rec: Any, out: Any) -> dict[str, Any] | None:
    """{"dim", "verified", "of"} when `out` is a tensor whose row slices were launched only in part
    (graph evidence for those rows alone), else None."""
    from runtime.evidence import rawbytes

    rows = rec.row_coverage.get(rawbytes.storage_ptr(out))
    if rows is None or rows["verified"] == [[0, rows["of"]]]:
        return None
    return rows if out.dim() > rows["dim"] and out.shape[rows["dim"]] == rows["of"] else None


def compare(out: Any, golden: Any, rtol: float, atol: float, rows: dict[str, Any] | None) -> dict[str, Any]:
    """metrics.compare, on the verified rows only when `rows` (a coverage) says some were not launched."""
    from runtime.evidence import metrics

    if rows is None or out.shape != golden.shape:
        return metrics.compare(out, golden, rtol, atol)
    found = metrics.compare(pick(out, rows["dim"], rows["verified"]), pick(golden, rows["dim"], rows["verified"]),
                            rtol, atol)
    return {**found, "rows": rows}


def before_whole(rec: Any, out: Any) -> Any:
    """Launches on row slices of `out`: what `out` held before them, put together from each slice's copy
    taken before the first launch that wrote it; None when they do not cover it."""
    import torch

    from runtime.evidence import rawbytes

    if not out.is_contiguous():
        return None
    whole, filled = out.detach().clone().reshape(-1), torch.zeros(out.numel(), dtype=torch.bool)
    sid, size = rawbytes.storage_ptr(out), out.element_size()
    for launch in rec.launches:
        for arg, storage in enumerate(launch.storages):
            part, view = launch.before[arg], launch.args[arg]
            if storage != sid or part is None or view.dtype != out.dtype or not view.is_contiguous():
                continue
            start = (view.data_ptr() - out.data_ptr()) // size
            if not 0 <= start <= out.numel() - part.numel():
                continue
            todo = ~filled[start:start + part.numel()]
            whole[start:start + part.numel()][todo] = part.reshape(-1).to(whole.dtype)[todo]
            filled[start:start + part.numel()] = True
    # Slices not launched (slice_sample.sample) are compared nowhere: their rows may stay as they are now.
    partly = coverage(rec, out) is not None
    return whole.reshape(out.shape) if bool(filled.all()) or partly and bool(filled.any()) else None
