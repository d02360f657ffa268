"""Walks kernel code in statement order, the order pypto traces it.

On the way it infers which names hold tensors or symbolic scalars, records the events the tiling rules
need (tiles set, vector op, matmul, loop, write) and reports misuse visible at one spot (iterating a
tensor, symbolic tile shapes, range() over a symbolic size, float loop bounds). Helpers called from
kernel code are walked in place with what the caller knows about their arguments; their events carry
the line of the call.
"""
from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping
from dataclasses import dataclass

from runtime.lint.module import Function, Module, own_nodes
from runtime.lint.rules import Findings
from runtime.lint.shapes import STATIC, Spec
from runtime.lint.values import OTHER, SCALAR_CALLS, SHAPE, SYM, TENSOR, Values, merge

VEC_TILES, CUBE_TILES, VEC_OP, MATMUL, LOOP, STITCH, WRITE, UNKNOWN = (
    "vec_tiles", "cube_tiles", "vec_op", "matmul", "loop", "stitch", "write", "unknown",
)  # UNKNOWN: a call into code we cannot see (another module), which may set tiles or do the work
MAX_DEPTH = 8  # helper nesting we follow
BUILTINS = frozenset(dir(builtins))

# pypto functions that create no vector op, so they need no vec tiles. Measured in SIM (0.2.0): view,
# reshape, unsqueeze and assemble compile before set_vec_tile_shapes; full, zeros, cast, clone and
# transpose fail there with F21004 (or FC0000 'TileShape dim num').
NO_TILE_CALLS = SCALAR_CALLS | {
    "view", "reshape", "unsqueeze", "assemble", "loop", "loop_unroll", "Tensor", "tensor", "from_torch",
    "reset_options", "pass_verify_print", "pass_verify_save", "bytes_of", "Element", "conv",
}
NO_TILE_METHODS = frozenset({
    "view", "reshape", "unsqueeze", "assemble", "move", "dim", "dtype", "format", "id", "name", "shape",
    "valid_shape", "get_cache_policy", "set_cache_policy", "base", "from_base",
})
VIEW_LISTS = ("shape", "offsets", "valid_shape")  # pypto.view's per-dim lists, one entry per dim each
ITERATING_BUILTINS = frozenset({"list", "tuple", "iter", "enumerate", "sorted", "set", "sum", "any", "all",
                                "reversed", "zip", "map", "min", "max"})


@dataclass(frozen=True)
class Event:
    """Something the tiling rules care about, at a line of the kernel being checked."""

    kind: str
    line: int
    what: str = ""


def describe(node: ast.AST, limit: int = 40) -> str:
    """Short source text of `node` for messages."""
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Walker(Values):
    """Walks one function of kernel code; `run()` returns its events."""

    def __init__(self, m: Module, findings: Findings, fn: Function, known: Mapping[str, str] | None = None,
                 specs: Mapping[str, Spec] | None = None, stack: tuple[str, ...] = (),
                 tuples: Mapping[str, list[str]] | None = None) -> None:
        super().__init__(m, fn, known, specs, tuples)
        self.findings, self.fn = findings, fn
        self.stack = (*stack, fn.name)
        self.nones: set[str] = set()  # names bound to None, so `if x is not None:` is dead code
        self.events: list[Event] = []

    def run(self) -> list[Event]:
        """Walk the body and return the events in trace order."""
        self.block(self.fn.body)
        return self.events

    # --- statements --------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> None:
        """Walk statements in order."""
        for stmt in stmts:
            self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> None:
        """Walk one statement: its expressions first, then its bindings, then its body."""
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        if isinstance(s, ast.Assign | ast.AnnAssign):
            if s.value is not None:
                self.expr(s.value)
                for target in s.targets if isinstance(s, ast.Assign) else [s.target]:
                    self._assign(target, s.value)
        elif isinstance(s, ast.AugAssign):
            self._augassign(s)
        elif isinstance(s, ast.For | ast.AsyncFor):
            self.expr(s.iter)
            self._bind_loop(s)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.If) and self._constant_test(s.test) is not None:
            self.block(s.body if self._constant_test(s.test) else s.orelse)  # tracing skips the dead branch
        elif isinstance(s, ast.While | ast.If):
            self.expr(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.With | ast.AsyncWith):
            for item in s.items:
                self.expr(item.context_expr)
            self.block(s.body)
        elif isinstance(s, ast.Try | ast.TryStar):
            for part in (s.body, *(h.body for h in s.handlers), s.orelse, s.finalbody):
                self.block(part)
        elif isinstance(s, ast.Match):
            self.expr(s.subject)
            for case in s.cases:
                self.block(case.body)
        else:
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def _constant_test(self, test: ast.expr) -> bool | None:
        """The value of an `if` test known before tracing (`bias is not None` after `bias = None`)."""
        if isinstance(test, ast.Constant):
            return bool(test.value)
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
                and test.left.id in self.nones and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None and isinstance(test.ops[0], ast.Is | ast.IsNot)):
            return isinstance(test.ops[0], ast.Is)
        return None

    def _assign(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            is_none = isinstance(value, ast.Constant) and value.value is None
            (self.nones.add if is_none else self.nones.discard)(target.id)
        kind = self.kind(value)
        if isinstance(target, ast.Subscript):
            self.expr(target.slice)
            if self.kind(target.value) == TENSOR:
                self.events.append(Event(WRITE, target.lineno))
        elif isinstance(target, ast.Tuple | ast.List) and kind == TENSOR and not isinstance(value, ast.Call):
            self._report_iteration(target.lineno, f"Unpacking tensor '{describe(value)}' into names raises "
                                   "'Cannot unpack non-sequence type Tensor'; unpack its .shape, or pass the "
                                   "sizes as int parameters.")
        self._bind(target, kind, value)

    def _augassign(self, s: ast.AugAssign) -> None:
        self.expr(s.value)
        if TENSOR in (self.kind(s.target), self.kind(s.value)):
            is_matmul = isinstance(s.op, ast.MatMult)
            self.events.append(Event(MATMUL if is_matmul else VEC_OP, s.lineno, "an augmented assignment"))
        if isinstance(s.target, ast.Name):
            self.set_kind(s.target.id, merge(self.kind(s.target), self.kind(s.value)))

    def _bind_loop(self, s: ast.For | ast.AsyncFor) -> None:
        it = s.iter
        if isinstance(it, ast.Call) and self.m.pypto_name(it.func) in ("loop", "loop_unroll"):
            # pypto.loop indices are symbolic; loop_unroll also yields a concrete unroll length.
            if isinstance(s.target, ast.Tuple) and s.target.elts:
                for i, elt in enumerate(s.target.elts):
                    self._bind(elt, SYM if i == 0 else OTHER)
            else:
                self._bind(s.target, SYM)
            return
        if self.kind(it) == TENSOR:
            self._report_iteration(s.lineno, f"A Python for loop over tensor '{describe(it)}' cannot be traced "
                                   "(it hangs or raises 'Loop iterator must be range'); loop over indices "
                                   "with pypto.loop and take views.")
        self._bind(s.target, self._element_kind(it))

    # --- expressions -------------------------------------------------------------------------

    def expr(self, node: ast.AST) -> None:
        """Record the events and misuse inside one expression."""
        for n in own_nodes(node):
            if isinstance(n, ast.Call):
                self._call(n)
            elif isinstance(n, ast.BinOp) and TENSOR in (self.kind(n.left), self.kind(n.right)):
                is_matmul = isinstance(n.op, ast.MatMult)
                self.events.append(Event(MATMUL if is_matmul else VEC_OP, n.lineno, "tensor arithmetic"))
            elif isinstance(n, ast.UnaryOp | ast.Compare) and self.kind(n) == TENSOR:
                self.events.append(Event(VEC_OP, n.lineno, "tensor arithmetic"))
            elif isinstance(n, ast.comprehension) and self.kind(n.iter) == TENSOR:
                self._report_iteration(n.iter.lineno, f"A comprehension over tensor '{describe(n.iter)}' "
                                       "iterates it, which pypto cannot trace; use pypto.loop and views.")

    def _call(self, call: ast.Call) -> None:
        name = self.m.pypto_name(call.func)
        func = call.func
        if name is not None:
            self._pypto_call(call, name)
        elif isinstance(func, ast.Name):
            self._builtin_or_helper(call, func.id)
        elif isinstance(func, ast.Attribute) and self.kind(func.value) == TENSOR:
            if func.attr == "matmul":
                self.events.append(Event(MATMUL, call.lineno, ".matmul()"))
            elif func.attr in ("move", "assemble"):
                self.events.append(Event(WRITE, call.lineno))
            elif func.attr not in NO_TILE_METHODS:
                self.events.append(Event(VEC_OP, call.lineno, f".{func.attr}()"))
        for arg in call.args:
            if isinstance(arg, ast.Starred) and self.kind(arg.value) == TENSOR:
                self._report_iteration(arg.lineno, f"'*{describe(arg.value)}' iterates a tensor, which hangs "
                                       "or fails in pypto; pass the tensor itself or unpack its .shape.")

    def _pypto_call(self, call: ast.Call, name: str) -> None:
        leaf = name.rpartition(".")[2]
        if name in ("set_vec_tile_shapes", "set_cube_tile_shapes"):
            self.events.append(Event(VEC_TILES if name == "set_vec_tile_shapes" else CUBE_TILES, call.lineno))
            self._check_tile_args(call, name)
        elif leaf in ("loop", "loop_unroll"):
            self.events.append(Event(LOOP, call.lineno))
            self._check_loop_bounds(call, name)
        elif "matmul" in leaf or leaf == "scaled_mm":
            self.events.append(Event(MATMUL, call.lineno, f"pypto.{name}"))
        elif leaf.startswith("set_") and leaf.endswith("options"):
            self.events += [Event(STITCH, line, key) for key, _, line in self.m.option_entries(call)
                            if key.startswith("stitch_")]
        elif leaf == "assemble":
            self.events.append(Event(WRITE, call.lineno))
        elif name == "view":
            self._check_view_lengths(call)
        elif "." not in name and name not in NO_TILE_CALLS and not name.startswith(("set_", "get_")):
            self.events.append(Event(VEC_OP, call.lineno, f"pypto.{name}"))

    def _builtin_or_helper(self, call: ast.Call, name: str) -> None:
        if name == "range" and any(self.kind(a) in (SYM, SHAPE) for a in call.args):
            self.findings.add("range-over-symbolic", call.lineno,
                              f"range({describe(call.args[-1])}) runs over a symbolic size (a DYNAMIC dim or a "
                              "pypto.loop index), which raises \"'SymbolicScalar' object cannot be interpreted "
                              "as an integer\"; use pypto.loop instead.")
        elif name in ITERATING_BUILTINS and self._iterates_tensor(call, name):
            self._report_iteration(call.lineno, f"{name}() over a tensor iterates it inside the kernel, which "
                                   "hangs pypto 0.2.0 forever (list(t)) or fails; use .shape or pypto.view.")
        elif name in self.m.functions and name not in self.m.kernels:
            self._inline(call, name)
        elif name not in BUILTINS | self.m.classes and name not in self.m.functions and name not in self.kinds:
            self.events.append(Event(UNKNOWN, call.lineno, name))

    def _iterates_tensor(self, call: ast.Call, name: str) -> bool:
        if name in ("zip", "map"):
            return any(self.kind(a) == TENSOR for a in call.args)
        if name in ("min", "max") and len(call.args) != 1:
            return False
        return bool(call.args) and self.kind(call.args[0]) == TENSOR

    def _inline(self, call: ast.Call, name: str) -> None:
        """Walk a helper in place, telling it which arguments are tensors or symbolic."""
        if name in self.stack or len(self.stack) >= MAX_DEPTH:
            return
        helper = self.m.functions[name]
        positional = [p.arg for p in (*helper.args.posonlyargs, *helper.args.args)]
        pairs = [(positional[i], a) for i, a in enumerate(call.args)
                 if i < len(positional) and not isinstance(a, ast.Starred)]
        pairs += [(k.arg, k.value) for k in call.keywords if k.arg]
        known = {p: self.kind(a) for p, a in pairs}
        specs = {p: self.specs.get(a.id, STATIC) if isinstance(a, ast.Name) else STATIC
                 for p, a in pairs if known[p] == TENSOR}
        tuples = {p: items for p, a in pairs if (items := self._item_kinds(a)) is not None}
        inner = Walker(self.m, self.findings, helper, known, specs, self.stack, tuples).run()
        self.events += [Event(e.kind, call.lineno, e.what) for e in inner]

    def _check_tile_args(self, call: ast.Call, name: str) -> None:
        args = [*call.args, *(k.value for k in call.keywords)]
        if any(self.kind(a) in (SYM, SHAPE) for a in args):
            self.findings.add("symbolic-tile-shape", call.lineno,
                              f"pypto.{name} gets sizes computed from a DYNAMIC dim or a pypto.loop index, "
                              "which fails with 'Not concrete value'; use constants or int parameters.")

    def _check_view_lengths(self, call: ast.Call) -> None:
        """pypto.view(t, shape, offsets, valid_shape=...) lists of different lengths (docs/pypto.md §9)."""
        given = dict(zip(("shape", "offsets"), call.args[1:3]))
        given.update((k.arg, k.value) for k in call.keywords if k.arg in VIEW_LISTS)
        lengths = {name: len(v.elts) for name, v in given.items() if isinstance(v, ast.List | ast.Tuple)
                   and not any(isinstance(e, ast.Starred) for e in v.elts)}
        if len(set(lengths.values())) < 2:
            return
        told = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        self.findings.add("view-rank-mismatch", call.lineno,
                          f"pypto.view({describe(call.args[0]) if call.args else ''}, ...) gets lists of different "
                          f"lengths ({told}); pypto 0.2.0 fails on it while compiling (F21004 'Their size actually "
                          "are ...' or 'lhs.size()') without naming this line. Give one entry per dim in shape, "
                          "offsets and valid_shape.", subject=told)

    def _check_loop_bounds(self, call: ast.Call, name: str) -> None:
        for arg in [*call.args, *(k.value for k in call.keywords if k.arg in ("start", "stop", "step", "end"))]:
            if self._is_float_like(arg):
                self.findings.add("float-loop-bound", arg.lineno,
                                  f"pypto.{name} gets '{describe(arg)}', which is not a Python int, so pypto "
                                  "raises 'Invalid value type'; use int(...) or floor division //.")
                return

    def _is_float_like(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, float)
        if isinstance(node, ast.Call):
            qualified = self.m.resolve(node.func) or ""
            return (isinstance(node.func, ast.Name) and node.func.id == "float") or qualified.startswith("numpy.")
        return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and self.kind(node) == OTHER

    def _report_iteration(self, line: int, message: str) -> None:
        self.findings.add("tensor-iteration", line, message)
