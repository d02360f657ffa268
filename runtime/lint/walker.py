"""Walks kernel code in statement order, the order pypto traces it.

On the way it infers which names hold tensors, dynamic shapes or symbolic scalars, records the
events the tiling rules need (tiles set, vector op, matmul, loop, write) and reports misuse that is
visible at one spot (iterating a tensor, symbolic tile shapes, range() over a shape, float loop bounds).
Helpers called from kernel code are walked in place, their events carrying the call's line.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from runtime.lint.module import Function, Module, own_nodes, params
from runtime.lint.rules import Findings

TENSOR, SHAPE, SYM, OTHER = "tensor", "shape", "sym", "other"  # SHAPE: a DYNAMIC tensor's .shape
VEC_TILES, CUBE_TILES, VEC_OP, MATMUL, LOOP, STITCH, WRITE = (
    "vec_tiles", "cube_tiles", "vec_op", "matmul", "loop", "stitch", "write",
)
MAX_DEPTH = 8

# pypto functions that return symbolic scalars, not tensors.
SCALAR_CALLS = frozenset({"max", "min", "ceildiv", "to_sym", "to_syms", "is_loop_begin", "is_loop_end", "cond"})
# pypto functions that create no vector op, so they need no vec tiles. Measured in SIM (0.2.0): view,
# reshape, unsqueeze and assemble compile before set_vec_tile_shapes; full, zeros, cast, clone and
# transpose fail with F21004 (or FC0000 'TileShape dim num') there.
NO_TILE_CALLS = SCALAR_CALLS | {
    "view", "reshape", "unsqueeze", "assemble", "loop", "loop_unroll", "Tensor", "tensor", "from_torch",
    "reset_options", "pass_verify_print", "pass_verify_save", "bytes_of", "SymbolicScalar", "Element", "conv",
}
MULTI_OUTPUT_CALLS = frozenset({"topk", "sort32", "mrgsort"})  # they return a tuple, unpacking is fine
NOT_TENSOR_RESULTS = MULTI_OUTPUT_CALLS | {
    "loop", "loop_unroll", "Tensor", "tensor", "from_torch", "reset_options", "pass_verify_print",
    "pass_verify_save", "bytes_of", "SymbolicScalar", "Element",
}
NO_TILE_METHODS = frozenset({
    "view", "reshape", "unsqueeze", "assemble", "move", "dim", "dtype", "format", "id", "name", "shape",
    "valid_shape", "get_cache_policy", "set_cache_policy", "base", "from_base",
})
ITERATING_BUILTINS = frozenset({"list", "tuple", "iter", "enumerate", "sorted", "set", "sum", "any", "all",
                                "reversed", "zip", "map", "min", "max"})


@dataclass(frozen=True)
class Event:
    """Something the tiling rules care about, at a line of the kernel being checked."""

    kind: str
    line: int
    what: str = ""


def merge(*kinds: str) -> str:
    """The kind of an expression combining values of `kinds`."""
    if TENSOR in kinds:
        return TENSOR
    return SYM if SYM in kinds or SHAPE in kinds else OTHER


def is_tensor_annotation(m: Module, ann: ast.expr | None) -> bool:
    """`pypto.Tensor`, `pypto.Tensor(...)`, `pypto.Tensor[...]` (any alias, `tensor` too)."""
    if isinstance(ann, ast.Call):
        ann = ann.func
    elif isinstance(ann, ast.Subscript):
        ann = ann.value
    return ann is not None and m.pypto_name(ann) in ("Tensor", "tensor")


def is_static_annotation(m: Module, ann: ast.expr) -> bool:
    """Whether a tensor annotation spells out a shape of plain ints (no DYNAMIC, no `...`)."""
    shape: ast.expr | None = None
    if isinstance(ann, ast.Call) and ann.args:
        shape = ann.args[0]
    elif isinstance(ann, ast.Subscript):
        shape = ann.slice.elts[0] if isinstance(ann.slice, ast.Tuple) and ann.slice.elts else ann.slice
    if isinstance(shape, ast.Name):
        shape = m.constants.get(shape.id)
    if not isinstance(shape, ast.List | ast.Tuple) or not shape.elts:
        return False
    return all(_is_int(m, e) for e in shape.elts)


def _is_int(m: Module, node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        node = m.constants.get(node.id, node)
    return isinstance(node, ast.Constant) and type(node.value) is int


def describe(node: ast.AST, limit: int = 40) -> str:
    """Short source text of `node` for messages."""
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Walker:
    """Walks one function of kernel code; `run()` returns its events."""

    def __init__(self, m: Module, findings: Findings, fn: Function,
                 seeds: frozenset[str] = frozenset(), stack: tuple[str, ...] = ()) -> None:
        self.m, self.findings, self.fn = m, findings, fn
        self.stack = (*stack, fn.name)
        self.kinds: dict[str, str] = {}
        self.static: set[str] = set()
        self.events: list[Event] = []
        for p in params(fn):
            if is_tensor_annotation(m, p.annotation) or p.arg in seeds:
                self.kinds[p.arg] = TENSOR
            if p.annotation is not None and is_tensor_annotation(m, p.annotation):
                if is_static_annotation(m, p.annotation):
                    self.static.add(p.arg)

    def run(self) -> list[Event]:
        """Walk the body and return the events in trace order."""
        self.block(self.fn.body)
        return self.events

    # --- value kinds -------------------------------------------------------------------------

    def kind(self, node: ast.AST) -> str:
        """TENSOR, SHAPE (dynamic shape tuple), SYM (symbolic scalar) or OTHER."""
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id, OTHER)
        if isinstance(node, ast.Attribute):
            if node.attr == "shape" and self.kind(node.value) == TENSOR:
                static = isinstance(node.value, ast.Name) and node.value.id in self.static
                return OTHER if static else SHAPE
            return OTHER
        if isinstance(node, ast.Subscript):
            base = self.kind(node.value)
            if base == SHAPE:
                return SHAPE if isinstance(node.slice, ast.Slice) else SYM
            return TENSOR if base == TENSOR else OTHER
        if isinstance(node, ast.Call):
            return self._call_kind(node)
        if isinstance(node, ast.BinOp):
            return merge(self.kind(node.left), self.kind(node.right))
        if isinstance(node, ast.UnaryOp):
            return merge(self.kind(node.operand))
        if isinstance(node, ast.IfExp):
            return merge(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return SYM if merge(*(self.kind(e) for e in node.elts)) != OTHER else OTHER
        if isinstance(node, ast.Starred):
            return self.kind(node.value)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return self._comprehension_kind(node)
        if isinstance(node, ast.Compare):
            return TENSOR if TENSOR in map(self.kind, [node.left, *node.comparators]) else OTHER
        return OTHER

    def _call_kind(self, call: ast.Call) -> str:
        args = [*call.args, *(k.value for k in call.keywords)]
        name = self.m.pypto_name(call.func)
        if name is not None:
            leaf = name.rpartition(".")[2]
            if leaf in SCALAR_CALLS:
                return SYM
            return OTHER if leaf in NOT_TENSOR_RESULTS or leaf.startswith(("set_", "get_")) else TENSOR
        func = call.func
        if isinstance(func, ast.Name):
            if func.id == "len":  # the rank is concrete even for DYNAMIC dims
                return OTHER
            arg_kind = merge(*map(self.kind, args))
            helper = self.m.functions.get(func.id)
            if helper is not None and arg_kind == TENSOR:
                return OTHER if _returns_tuple(helper) else TENSOR
            return SYM if arg_kind == SYM else OTHER
        if isinstance(func, ast.Attribute) and self.kind(func.value) == TENSOR:
            return OTHER if func.attr == "dim" else TENSOR
        return OTHER

    def _comprehension_kind(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> str:
        saved = dict(self.kinds)
        for gen in node.generators:
            source = self.kind(gen.iter)
            self._bind(gen.target, SYM if source == SHAPE else TENSOR if source == TENSOR else OTHER)
        result = self.kind(node.elt)
        self.kinds = saved
        return SYM if result in (SYM, SHAPE) else OTHER

    def _bind(self, target: ast.AST, kind: str, value: ast.AST | None = None) -> None:
        if isinstance(target, ast.Name):
            self.kinds[target.id] = kind
        elif isinstance(target, ast.Starred):
            self._bind(target.value, kind)
        elif isinstance(target, ast.Tuple | ast.List):
            literal = isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
            for i, elt in enumerate(target.elts):
                if literal and not isinstance(elt, ast.Starred):
                    assert isinstance(value, ast.Tuple | ast.List)
                    self._bind(elt, self.kind(value.elts[i]))
                elif kind == SHAPE:
                    self._bind(elt, SHAPE if isinstance(elt, ast.Starred) else SYM)
                else:
                    self._bind(elt, TENSOR if kind == TENSOR else OTHER)

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
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                for target in targets:
                    self._assign(target, s.value)
        elif isinstance(s, ast.AugAssign):
            self._augassign(s)
        elif isinstance(s, ast.For | ast.AsyncFor):
            self.expr(s.iter)
            self._bind_loop(s)
            self.block(s.body)
            self.block(s.orelse)
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

    def _assign(self, target: ast.expr, value: ast.expr) -> None:
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
            self.kinds[s.target.id] = merge(self.kind(s.target), self.kind(s.value))

    def _bind_loop(self, s: ast.For | ast.AsyncFor) -> None:
        it = s.iter
        if isinstance(it, ast.Call) and self.m.pypto_name(it.func) in ("loop", "loop_unroll"):
            self._bind(s.target, SYM)  # pypto.loop indices are symbolic scalars
            return
        source = self.kind(it)
        if source == TENSOR:
            self._report_iteration(s.lineno, f"A Python for loop over tensor '{describe(it)}' cannot be traced "
                                   "(it hangs or raises 'Loop iterator must be range'); loop over indices "
                                   "with pypto.loop and take views.")
        self._bind(s.target, SYM if source == SHAPE else TENSOR if source == TENSOR else OTHER)

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
        elif "." not in name and name not in NO_TILE_CALLS and not name.startswith(("set_", "get_")):
            self.events.append(Event(VEC_OP, call.lineno, f"pypto.{name}"))

    def _builtin_or_helper(self, call: ast.Call, name: str) -> None:
        if name == "range" and any(self.kind(a) in (SYM, SHAPE) for a in call.args):
            self.findings.add("range-over-symbolic", call.lineno,
                              f"range({describe(call.args[-1])}) iterates a tensor shape, which raises "
                              "\"'SymbolicScalar' object cannot be interpreted as an integer\" for DYNAMIC "
                              "dims; use pypto.loop instead.")
        elif name in ITERATING_BUILTINS and self._iterates_tensor(call, name):
            self._report_iteration(call.lineno, f"{name}() over a tensor iterates it inside the kernel, which "
                                   "hangs pypto 0.2.0 forever (list(t)) or fails; use .shape or pypto.view.")
        elif name in self.m.functions and name not in self.m.kernels:
            self._inline(call, name)

    def _iterates_tensor(self, call: ast.Call, name: str) -> bool:
        if name in ("zip", "map"):
            return any(self.kind(a) == TENSOR for a in call.args)
        if name in ("min", "max") and len(call.args) != 1:
            return False
        return bool(call.args) and self.kind(call.args[0]) == TENSOR

    def _inline(self, call: ast.Call, name: str) -> None:
        if name in self.stack or len(self.stack) >= MAX_DEPTH:
            return
        helper = self.m.functions[name]
        positional = [p.arg for p in (*helper.args.posonlyargs, *helper.args.args)]
        seeds = {positional[i] for i, a in enumerate(call.args)
                 if i < len(positional) and not isinstance(a, ast.Starred) and self.kind(a) == TENSOR}
        seeds |= {k.arg for k in call.keywords if k.arg and self.kind(k.value) == TENSOR}
        inner = Walker(self.m, self.findings, helper, frozenset(seeds), self.stack).run()
        self.events += [Event(e.kind, call.lineno, e.what) for e in inner]

    def _check_tile_args(self, call: ast.Call, name: str) -> None:
        args = [*call.args, *(k.value for k in call.keywords)]
        if any(self.kind(a) in (SYM, SHAPE) for a in args):
            self.findings.add("symbolic-tile-shape", call.lineno,
                              f"pypto.{name} gets sizes computed from tensor shapes or loop indices, which "
                              "fail with 'Not concrete value' when the dim is DYNAMIC; use constants or int "
                              "parameters.")

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


def _returns_tuple(fn: Function) -> bool:
    """Whether a helper returns a tuple literal somewhere (so its result may be unpacked)."""
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) for n in own_nodes(fn.body))
