"""Rules on host code: fallbacks around the kernel, torch maths on its output, and import-time run modes."""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from runtime.lint.module import Function, Module, calls_in, dotted, own_nodes, params
from runtime.lint.rules import GOLDEN_FALLBACK, Findings

# torch namespaces whose functions compute; other namespaces (torch.npu, torch.testing) do not.
TORCH_MATH_MODULES = frozenset({"torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"})
# torch functions that allocate, move or compare rather than compute the operator.
TORCH_NEUTRAL = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "tensor", "as_tensor", "from_numpy", "as_strided", "manual_seed", "device", "dtype", "is_tensor",
    "no_grad", "inference_mode", "cat", "concat", "stack", "split", "chunk", "reshape", "flatten", "squeeze",
    "unsqueeze", "permute", "transpose", "narrow", "allclose", "isclose", "equal", "randn", "rand",
    "randint", "randn_like", "rand_like", "arange", "get_default_dtype", "set_default_dtype",
})
# Tensor methods that change layout, device or dtype but not values.
PASSTHROUGH = frozenset({
    "contiguous", "view", "view_as", "reshape", "reshape_as", "cpu", "cuda", "npu", "to", "type", "type_as",
    "float", "half", "double", "bfloat16", "int", "long", "detach", "clone", "squeeze", "unsqueeze", "flatten",
    "unflatten", "permute", "transpose", "t", "expand", "expand_as", "narrow", "numpy", "tolist", "item",
    "size", "dim", "numel", "pin_memory", "is_contiguous", "data_ptr", "split", "chunk", "synchronize",
})
NOT_MATH_INPLACE = frozenset({"requires_grad_", "share_memory_", "copy_"})
COMPARISONS = frozenset({"allclose", "isclose", "equal", "assert_allclose", "assert_close", "testing"})
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def check_host(m: Module, f: Findings) -> None:
    """Run the host-side rules over module-level code and every function outside kernel code."""
    for body, names in _host_scopes(m):
        _fallbacks(m, f, body, names)
    for name, fn in m.functions.items():
        if name not in m.kernel_code:
            _after_kernel(m, f, fn)
    _run_mode(m, f)


def _host_scopes(m: Module) -> Iterator[tuple[list[ast.stmt], set[str]]]:
    yield m.tree.body, set()
    for name, fn in m.functions.items():
        if name not in m.kernel_code:
            yield fn.body, {p.arg for p in params(fn)}


def is_goldenish(name: str) -> bool:
    """Whether an identifier names a golden or reference implementation (`Op_golden`, `torch_ref`)."""
    lowered = name.lower()
    words = {w.lower() for w in _WORDS.findall(name)}
    return "golden" in lowered or "reference" in lowered or "ref" in words or "expected" in words


def torch_math(m: Module, call: ast.Call) -> str | None:
    """`torch.relu` for a call that computes with torch, else None."""
    name = m.resolve(call.func)
    if name is None:
        return None
    module, _, leaf = name.rpartition(".")
    return name if module in TORCH_MATH_MODULES and leaf not in TORCH_NEUTRAL else None


# --- golden-fallback -------------------------------------------------------------------------


def _fallbacks(m: Module, f: Findings, body: list[ast.stmt], names: set[str]) -> None:
    for node in own_nodes(body):
        if isinstance(node, ast.Try | ast.TryStar) and any(m.is_launch(c) for c in calls_in(node.body)):
            for handler in node.handlers:
                found = _fallback(m, handler, names)
                if found:
                    line, what = found
                    f.add(GOLDEN_FALLBACK, line,
                          f"When the kernel call fails, this except handler {what}, so a broken kernel still "
                          "'passes' (max |diff| 0); let the exception propagate instead of falling back.")


def _fallback(m: Module, handler: ast.ExceptHandler, names: set[str]) -> tuple[int, str] | None:
    """(line, what) of the first fallback value in `handler`; None when it re-raises."""
    if any(isinstance(s, ast.Raise) for s in handler.body):
        return None
    for node in own_nodes(handler.body):
        if isinstance(node, ast.Call) and is_goldenish(dotted(node.func) or ""):
            return node.lineno, f"calls {dotted(node.func)}()"
        if isinstance(node, ast.Return) and node.value is not None:
            if any(m.is_torch(c.func) for c in calls_in(node.value)):
                return node.lineno, "returns a torch result"
            root = _root(node.value)
            if root in names:
                return node.lineno, f"returns the input '{root}'"
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None \
                and any(torch_math(m, c) for c in calls_in(node.value)):
            return node.lineno, "assigns a torch result"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "copy_" \
                and any(torch_math(m, c) for c in calls_in(node)):
            return node.lineno, "copies a torch result into the output"
    return None


def _root(node: ast.expr) -> str | None:
    """The name under subscripts and value-preserving method calls: `out` for `out[0].cpu()`."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in PASSTHROUGH):
            node = node.func.value
        else:
            return node.id if isinstance(node, ast.Name) else None


# --- torch-after-kernel ----------------------------------------------------------------------


def _after_kernel(m: Module, f: Findings, fn: Function) -> None:
    stmts = [n for n in own_nodes(fn.body) if isinstance(n, ast.stmt)]
    last: int | None = None
    tracked: set[str] = set()
    for i, s in enumerate(stmts):
        launches = [c for e in _own_exprs(s) for c in calls_in(e) if m.is_launch(c)]
        for call in launches:
            roots = (_root(a) for a in [*call.args, *(k.value for k in call.keywords)])
            tracked |= {root for root in roots if root is not None}
            if isinstance(s, ast.Assign):
                tracked |= {n.id for t in s.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if launches:
            last = i
    if last is None:
        return
    tracked = {name for name in tracked if not is_goldenish(name)}
    # Torch code between two launches feeds the next kernel; only what follows the last one is post-processing.
    after = stmts[last:]
    returned = {n.id for s in after if isinstance(s, ast.Return) and s.value
                for n in ast.walk(s.value) if isinstance(n, ast.Name)}
    # Handlers are the golden-fallback rule's business; reporting them twice adds nothing.
    handled = {id(n) for h in own_nodes(fn.body) if isinstance(h, ast.ExceptHandler) for n in own_nodes(h.body)}
    for s in after:
        what = None if id(s) in handled else _post_processing(m, s, tracked, returned)
        if what:
            f.add("torch-after-kernel", s.lineno,
                  f"{what} after the kernel call, so the result is not the kernel's own output; compute it "
                  "inside the jit kernel and return the output buffer as written.")


def _own_exprs(s: ast.stmt) -> list[ast.expr]:
    """The expressions that belong to `s` itself, not to the statements nested in it."""
    exprs = [c for c in ast.iter_child_nodes(s) if isinstance(c, ast.expr)]
    if isinstance(s, ast.With | ast.AsyncWith):
        exprs += [item.context_expr for item in s.items]
    return exprs


def _post_processing(m: Module, s: ast.stmt, tracked: set[str], returned: set[str]) -> str | None:
    """What `s` does to the kernel's output with torch maths, or None."""
    if isinstance(s, ast.AugAssign) and _root(s.target) in tracked:
        return f"'{ast.unparse(s).strip()}' changes the kernel output in place"
    if isinstance(s, ast.Assign):
        math = _math(m, s.value, tracked)
        if math is None:
            if _root(s.value) in tracked:  # y = out.view(...): y is the output too
                tracked |= {t.id for t in s.targets if isinstance(t, ast.Name) and not is_goldenish(t.id)}
            return None
        if any(isinstance(t, ast.Subscript) and _root(t) in tracked for t in s.targets):
            return f"{math} is written into the kernel output"
        if any(isinstance(t, ast.Name) and t.id in returned and not is_goldenish(t.id) for t in s.targets):
            return f"{math} is applied to the kernel output on the way to the return value"
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        return _inplace(m, s.value, tracked)
    if isinstance(s, ast.Return) and s.value is not None and not _is_comparison(m, s.value):
        math = _math(m, s.value, tracked)
        return f"{math} is returned" if math else None
    return None


def _math(m: Module, expr: ast.expr, tracked: set[str]) -> str | None:
    """How `expr` computes with torch or on the kernel output (`torch.relu`, `arithmetic`), or None."""
    for node in own_nodes(expr):
        if isinstance(node, ast.Call):
            name = torch_math(m, node)
            if name:
                return f"{name}()"
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr not in PASSTHROUGH and _root(func.value) in tracked:
                return f".{func.attr}()"
        elif isinstance(node, ast.BinOp) and {_root(node.left), _root(node.right)} & tracked:
            return "arithmetic"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _root(node.operand) in tracked:
            return "negation"
    return None


def _inplace(m: Module, call: ast.Call, tracked: set[str]) -> str | None:
    """An in-place torch op on the kernel output (`out.mul_(2)`, `torch.relu(x, out=out)`), or None."""
    func = call.func
    if isinstance(func, ast.Attribute) and _root(func.value) in tracked and func.attr.endswith("_"):
        args_math = any(_math(m, a, tracked) or any(is_goldenish(dotted(c.func) or "") for c in calls_in(a))
                        for a in call.args)
        if func.attr not in NOT_MATH_INPLACE or (func.attr == "copy_" and args_math):
            return f".{func.attr}() changes the kernel output in place"
    name = torch_math(m, call)
    if name and any(k.arg == "out" and _root(k.value) in tracked for k in call.keywords):
        return f"{name}(..., out=...) overwrites the kernel output"
    if name and name.endswith("_") and any(_root(a) in tracked for a in call.args):
        return f"{name}() changes the kernel output in place"
    return None


def _is_comparison(m: Module, expr: ast.expr) -> bool:
    """Whether a returned expression compares with a golden rather than producing the result."""
    for node in own_nodes(expr):
        if isinstance(node, ast.Compare):
            return True
        if isinstance(node, ast.Name) and is_goldenish(node.id):
            return True
        if isinstance(node, ast.Call) and (dotted(node.func) or "").rpartition(".")[2] in COMPARISONS:
            return True
    return False


# --- argv-run-mode-in-main -------------------------------------------------------------------


def _run_mode(m: Module, f: Findings) -> None:
    for kernel in m.kernels.values():
        if not kernel.decorated:  # the call form runs wherever it is written, after parsing is fine
            continue
        for key, value, line in m.option_entries(kernel.jit):
            if key != "run_mode":
                continue
            for name in sorted({n.id for n in ast.walk(value) if isinstance(n, ast.Name)}):
                late = _late_binding(m, name, kernel.jit.lineno)
                if late and not _peeks_argv_before(m, kernel.jit.lineno):
                    where, bound_at = late
                    first = _bound_before(m, name, kernel.jit.lineno)
                    f.add("argv-run-mode-in-main", line,
                          f"The jit decorator reads run_mode from '{name}' at import, but '{name}' is only set "
                          f"later ({where}, line {bound_at}), so the kernel keeps the import-time mode; peek "
                          "--run_mode in sys.argv at module level before decorating (_peek_run_mode_from_argv).",
                          subject=f"{name} = {ast.unparse(first)}" if first is not None else name)
            if _pinned_npu(m, value, kernel.jit.lineno):
                f.add("run-mode-pinned-npu", line,
                      "The jit decorator pins run_mode to pypto.RunMode.NPU: the kernel runs on the NPU whatever "
                      "--run_mode the test gets, so the test's own SIM run fails ('Not npu device' on CPU "
                      "tensors). crosscheck runs every launch in the job's mode (docs/realops.md §10): its SIM "
                      "verdict is not what `python test.py --run_mode sim` does. Take run_mode from the command "
                      "line before decorating, or leave it out.")


def _bound_before(m: Module, name: str, decorator_line: int) -> ast.expr | None:
    """The value module-level code last binds to `name` before the decorator runs (its import-time value)."""
    bound = [n for n in own_nodes(m.tree.body) if isinstance(n, ast.Assign) and n.lineno < decorator_line
             and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
    return bound[-1].value if bound else None


def _pinned_npu(m: Module, value: ast.expr, decorator_line: int) -> bool:
    """`run_mode: pypto.RunMode.NPU`, or a module-level name bound to it once before the decorator and never again."""
    if isinstance(value, ast.Name):
        bound = [n for n in own_nodes(m.tree.body) if isinstance(n, ast.Assign) and n.lineno < decorator_line
                 and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
        if len(bound) != 1 or _late_binding(m, value.id, decorator_line):
            return False
        value = bound[0].value
    return (dotted(value) or "").endswith("RunMode.NPU")


def _late_binding(m: Module, name: str, decorator_line: int) -> tuple[str, int] | None:
    """Where `name` is rebound after the decorator ran: in a function via `global`, or later at module level."""
    for fn in m.functions.values():
        declared = any(isinstance(n, ast.Global) and name in n.names for n in own_nodes(fn.body))
        line = next(_assignments(fn.body, name), None) if declared else None
        if line is not None:
            return f"in {fn.name}()", line
    late = next((n for n in _assignments(m.tree.body, name) if n > decorator_line), None)
    return ("at module level after the decorator", late) if late is not None else None


def _assignments(body: list[ast.stmt], name: str) -> Iterator[int]:
    """Lines where `body` (outside nested scopes) binds `name`."""
    for node in own_nodes(body):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            yield node.lineno


def _peeks_argv_before(m: Module, line: int) -> bool:
    """Whether module-level code before `line` reads sys.argv, directly or through a module function."""
    for node in own_nodes(m.tree.body):
        if getattr(node, "lineno", line) >= line:
            continue
        if dotted(node) == "sys.argv" or (isinstance(node, ast.Call) and _reads_argv(m, node)):
            return True
    return False


def _reads_argv(m: Module, call: ast.Call) -> bool:
    if isinstance(call.func, ast.Attribute) and call.func.attr == "parse_known_args":
        return True
    fn = m.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
    return fn is not None and any(dotted(n) == "sys.argv" for n in own_nodes(fn.body))
