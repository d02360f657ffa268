"""What the names in kernel code hold: tensors, DYNAMIC shapes, symbolic scalars or plain values.

The inference is a forward pass in statement order (the order pypto traces), one function at a time;
callers seed it with what they know about the arguments. It is deliberately local: anything it cannot
see is OTHER, so the rules built on it stay quiet rather than guess.
"""
from __future__ import annotations

import ast
from collections.abc import Mapping

from runtime.lint.module import Function, Module, own_nodes, params
from runtime.lint.shapes import STATIC, ShapeRef, Spec, annotation_spec, is_tensor_annotation

TENSOR, SHAPE, SYM, OTHER = "tensor", "shape", "sym", "other"  # SHAPE: a shape with a DYNAMIC dim

# pypto functions that return scalars, symbolic when an argument is.
SCALAR_CALLS = frozenset({"max", "min", "ceildiv", "to_sym", "to_syms", "is_loop_begin", "is_loop_end", "cond",
                          "symbolic_scalar", "SymbolicScalar", "SymInt"})
LOOP_TESTS = frozenset({"is_loop_begin", "is_loop_end", "cond"})
SYMBOL_FACTORIES = frozenset({"symbolic_scalar", "SymbolicScalar", "SymInt"})  # SymbolicScalar("bs") is a symbol
MULTI_OUTPUT_CALLS = frozenset({"topk", "sort32", "mrgsort"})  # they return tuples: unpacking is fine
NOT_TENSOR_RESULTS = MULTI_OUTPUT_CALLS | {
    "loop", "loop_unroll", "Tensor", "tensor", "from_torch", "reset_options", "pass_verify_print",
    "pass_verify_save", "bytes_of", "SymbolicScalar", "Element",
}


def merge(*kinds: str) -> str:
    """The kind of an expression combining values of `kinds`."""
    if TENSOR in kinds:
        return TENSOR
    return SYM if SYM in kinds or SHAPE in kinds else OTHER


class Values:
    """The kinds of the names in one function, updated as its statements are walked."""

    def __init__(self, m: Module, fn: Function, known: Mapping[str, str] | None = None,
                 specs: Mapping[str, Spec] | None = None, tuples: Mapping[str, list[str]] | None = None) -> None:
        self.m = m
        self.kinds: dict[str, str] = dict(known or {})  # parameter kinds the caller knows
        self.specs: dict[str, Spec] = dict(specs or {})  # DYNAMIC dims of tensor names
        self.shapes: dict[str, ShapeRef] = {}  # names bound to a tensor's shape
        self.tuples: dict[str, list[str]] = dict(tuples or {})  # names bound to a tuple: item kinds
        self._cache: dict[int, str] = {}  # kind by node id, valid until the next binding
        for p in params(fn):
            if p.annotation is not None and is_tensor_annotation(m, p.annotation) and p.arg not in self.specs:
                self.kinds[p.arg] = TENSOR
                self.specs[p.arg] = annotation_spec(m, p.annotation)

    def kind(self, node: ast.AST) -> str:
        """TENSOR, SHAPE (shape with a DYNAMIC dim), SYM (symbolic scalar) or OTHER."""
        cached = self._cache.get(id(node))
        if cached is None:  # cached because expressions are asked about once per enclosing node
            cached = self._cache[id(node)] = self._kind(node)
        return cached

    def set_kind(self, name: str, kind: str) -> None:
        """Bind `name` to a value of `kind`."""
        self.kinds[name] = kind
        self._cache.clear()

    def _kind(self, node: ast.AST) -> str:
        ref = self.shape_ref(node)
        if ref is not None:
            return SHAPE if ref.any_dynamic() else OTHER
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id, OTHER)
        if isinstance(node, ast.Subscript):
            return self._subscript_kind(node)
        if isinstance(node, ast.Call):
            return self._call_kind(node)
        if isinstance(node, ast.BinOp):
            return merge(self.kind(node.left), self.kind(node.right))
        if isinstance(node, ast.UnaryOp):
            return merge(self.kind(node.operand))
        if isinstance(node, ast.IfExp):
            return merge(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return SYM if any(self.kind(e) in (SYM, SHAPE) for e in node.elts) else OTHER
        if isinstance(node, ast.Starred):
            return self.kind(node.value)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return self._comprehension_kind(node)
        if isinstance(node, ast.Compare) and not any(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
            return TENSOR if TENSOR in map(self.kind, [node.left, *node.comparators]) else OTHER
        return OTHER

    def shape_ref(self, node: ast.AST) -> ShapeRef | None:
        """The tensor shape `node` stands for: `x.shape`, an alias of it, or `x.shape[k:]`."""
        if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name) \
                and self.kinds.get(node.value.id) == TENSOR:
            return ShapeRef(self.specs.get(node.value.id, STATIC))
        if isinstance(node, ast.Name):
            return self.shapes.get(node.id)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            ref = self.shape_ref(node.value)
            start = 0 if node.slice.lower is None else self._int_constant(node.slice.lower)
            if ref is None or start is None:
                return None
            if start < 0:  # x.shape[-2:] needs the rank to know which dims these are
                rank = ref.spec.rank
                return None if rank is None else ShapeRef(ref.spec, rank + start)
            return ShapeRef(ref.spec, ref.offset + start)
        return None

    def _subscript_kind(self, node: ast.Subscript) -> str:
        ref = self.shape_ref(node.value)
        if ref is not None:  # one dim of a shape
            index = self._int_constant(node.slice)
            if index is not None:
                return SYM if ref.dim_is_dynamic(index) else OTHER
            return SYM if ref.any_dynamic() else OTHER
        if self.kind(node.value) != TENSOR:
            return OTHER
        return SYM if self._reads_element(node) else TENSOR

    def _item_kinds(self, value: ast.AST | None) -> list[str] | None:
        """The kinds of a tuple's items, when `value` is a tuple literal or a name bound to one."""
        if isinstance(value, ast.Tuple | ast.List):
            return [self.kind(e) for e in value.elts]
        if isinstance(value, ast.Name):
            return self.tuples.get(value.id)
        return None

    def _int_constant(self, node: ast.expr) -> int | None:
        """The int an index expression spells: `1`, `-1`, or a module constant such as `DIM1 = 1`."""
        if isinstance(node, ast.Name):
            node = self.m.constants.get(node.id, node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self._int_constant(node.operand)
            return None if inner is None else -inner
        return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None

    def _reads_element(self, node: ast.Subscript) -> bool:
        """Whether `t[i]` / `t[i, j]` reads one element (a scalar), not a view."""
        index = node.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        if any(isinstance(p, ast.Slice | ast.Starred) or (isinstance(p, ast.Constant) and p.value is Ellipsis)
               for p in parts):
            return False
        rank = self.specs[node.value.id].rank if isinstance(node.value, ast.Name) and \
            node.value.id in self.specs else None
        return rank is None or len(parts) >= rank

    def _call_kind(self, call: ast.Call) -> str:
        args = [*call.args, *(k.value for k in call.keywords)]
        name = self.m.pypto_name(call.func)
        if name is not None:
            leaf = name.rpartition(".")[2]
            if leaf in SCALAR_CALLS:  # pypto.min(4, 8) and symbolic_scalar(32) stay concrete
                named = leaf in SYMBOL_FACTORIES and any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                                          for a in args)
                return SYM if leaf in LOOP_TESTS or named else merge(OTHER, *map(self.kind, args))
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
        if isinstance(func, ast.Attribute):
            receiver = self.kind(func.value)
            if receiver == TENSOR:
                return OTHER if func.attr == "dim" else TENSOR
            return SYM if receiver == SYM else OTHER  # SymbolicScalar methods: .max(0), .min(n)
        return OTHER

    def _comprehension_kind(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> str:
        saved = dict(self.kinds)
        for gen in node.generators:
            self._bind(gen.target, self._element_kind(gen.iter))
        result = self.kind(node.elt)
        self.kinds = saved
        self._cache.clear()
        return SYM if result in (SYM, SHAPE) else OTHER

    def _element_kind(self, iterable: ast.expr) -> str:
        """The kind of the items a for loop over `iterable` yields."""
        source = self.kind(iterable)
        return SYM if source == SHAPE else TENSOR if source == TENSOR else OTHER

    def _bind(self, target: ast.AST, kind: str, value: ast.AST | None = None) -> None:
        if isinstance(target, ast.Name):
            ref = self.shape_ref(value) if value is not None else None
            items = self._item_kinds(value)
            self.shapes.pop(target.id, None)
            self.tuples.pop(target.id, None)
            if ref is not None:
                self.shapes[target.id] = ref
            if items is not None:
                self.tuples[target.id] = items
            self.set_kind(target.id, kind)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, kind)
        elif isinstance(target, ast.Tuple | ast.List):
            self._bind_unpack(target, kind, value)

    def _bind_unpack(self, target: ast.Tuple | ast.List, kind: str, value: ast.AST | None) -> None:
        ref = self.shape_ref(value) if value is not None else None
        literal = value.elts if isinstance(value, ast.Tuple | ast.List) else None
        items = self._item_kinds(value)
        starred = False
        for i, elt in enumerate(target.elts):
            starred = starred or isinstance(elt, ast.Starred)
            if ref is not None:  # bs, n, d = x.shape: each name is one dim
                dynamic = ref.any_dynamic() if starred else ref.dim_is_dynamic(i)
                self._bind(elt, (SHAPE if isinstance(elt, ast.Starred) else SYM) if dynamic else OTHER)
            elif literal is not None and len(literal) == len(target.elts) and not starred:
                self._bind(elt, self.kind(literal[i]), literal[i])
            elif items is not None and len(items) == len(target.elts) and not starred:
                self._bind(elt, items[i])
            else:
                self._bind(elt, TENSOR if kind == TENSOR else SYM if kind in (SYM, SHAPE) else OTHER)


def _returns_tuple(fn: Function) -> bool:
    """Whether a helper returns a tuple literal somewhere (so its result may be unpacked)."""
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) for n in own_nodes(fn.body))
