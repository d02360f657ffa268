"""One module as the rules see it: import aliases, jit kernels, kernel helpers and kernel launchers.

Kernel calls across files are a best-effort heuristic: a name counts as a kernel launch when it is a
jit function of this module, a function of this module that (transitively) calls one, or a name
imported from a sibling module that exports such functions (`lint_files` passes them in) or from any
module whose name ends with `_impl` (the operator-package convention: `<op>_impl.<Op>_wrapper`).
"""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

JIT = frozenset({"pypto.frontend.jit", "pypto.jit"})
SUBGRAPH = frozenset({"pypto.frontend.function", "pypto.function"})
IMPL_SUFFIX = "_impl"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

Function = ast.FunctionDef | ast.AsyncFunctionDef


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def own_nodes(nodes: list[ast.stmt] | ast.AST) -> Iterator[ast.AST]:
    """Every node under `nodes` in source order, not descending into nested defs, classes or lambdas."""
    stack: list[ast.AST] = [*reversed(nodes)] if isinstance(nodes, list) else [nodes]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def calls_in(nodes: list[ast.stmt] | ast.AST) -> Iterator[ast.Call]:
    """The calls under `nodes`, outside nested scopes."""
    return (n for n in own_nodes(nodes) if isinstance(n, ast.Call))


def params(fn: Function) -> list[ast.arg]:
    """All named parameters of `fn`, in declaration order."""
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs]


@dataclass
class Kernel:
    """A jit function and the jit expression that made it (decorator or `jit(...)(fn)` call)."""

    fn: Function
    jit: ast.expr
    decorated: bool  # True for `@jit`, False for the call form, which can run anywhere


class Module:
    """What the rules need to know about one parsed file."""

    def __init__(self, tree: ast.Module, siblings: Mapping[str, frozenset[str]]) -> None:
        self.tree = tree
        nodes = list(ast.walk(tree))
        self.imports = _import_map(nodes)
        self.constants: dict[str, ast.expr] = {
            t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
        }
        self.functions: dict[str, Function] = {
            n.name: n for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        self.classes = {n.name for n in nodes if isinstance(n, ast.ClassDef)}
        self.kernels: dict[str, Kernel] = {}
        self.subgraphs: dict[str, Function] = {}
        self.launch_names: set[str] = set()  # jit functions, `k = jit(...)(fn)` names and imported launches
        self.local_launches: set[str] = set()  # the first two only: what this module exports
        self.launch_modules: dict[str, frozenset[str] | None] = {}  # alias -> its kernels (None: any)
        self._find_kernels(nodes)
        self.launch_names |= self.local_launches
        self._find_imported_launches(nodes, siblings)
        self.kernel_code = self._kernel_closure()
        self.launchers: set[str] = set()  # host functions that launch a kernel, directly or not
        self.launchers = self._find_launchers()  # (is_launch reads the empty set while this runs)

    def resolve(self, node: ast.AST) -> str | None:
        """The qualified name of a Name/Attribute chain whose root is an import, e.g. `pypto.loop`."""
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        if root not in self.imports:
            return None
        return self.imports[root] + ("." + rest if rest else "")

    def pypto_name(self, node: ast.AST) -> str | None:
        """`loop` for `pypto.loop` (whatever the alias), `experimental.nop` for deeper names, else None."""
        name = self.resolve(node)
        if name is None or not name.startswith("pypto."):
            return None
        return name.removeprefix("pypto.")

    def is_torch(self, node: ast.AST) -> bool:
        """Whether a Name/Attribute chain resolves into torch."""
        name = self.resolve(node)
        return name is not None and (name == "torch" or name.startswith("torch."))

    def is_launch(self, call: ast.Call) -> bool:
        """Whether `call` launches a kernel: a jit function, a launcher, or an imported one."""
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in self.launch_names or func.id in self.launchers
        if isinstance(func, ast.Subscript):  # kernel[grid](...) launch syntax
            return isinstance(func.value, ast.Name) and func.value.id in self.launch_names
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id in self.launch_modules:
            exported = self.launch_modules[func.value.id]
            return exported is None or func.attr in exported
        return False

    def exported_launches(self) -> frozenset[str]:
        """Names other modules may import to launch this module's kernels."""
        return frozenset(self.local_launches | self.launchers)

    def sets_at_module_level(self, pypto_fn: str) -> bool:
        """Whether module-level code (outside any def) calls `pypto.<pypto_fn>`."""
        return any(self.pypto_name(c.func) == pypto_fn for c in calls_in(self.tree.body))

    def option_entries(self, jit: ast.expr) -> list[tuple[str, ast.expr, int]]:
        """(key, value, line) of every option dict entry in a `jit(...)` or `set_*_options(...)` call."""
        if not isinstance(jit, ast.Call):
            return []
        entries = [(k.arg, k.value, k.value.lineno) for k in jit.keywords if k.arg]
        for value in [*jit.args, *(k.value for k in jit.keywords)]:
            if isinstance(value, ast.Name):  # runtime_options=OPTIONS, a module-level dict
                value = self.constants.get(value.id, value)
            if isinstance(value, ast.Dict):
                entries += [
                    (k.value, v, k.lineno)
                    for k, v in zip(value.keys, value.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                ]
            elif isinstance(value, ast.Call) and dotted(value.func) == "dict":
                entries += [(k.arg, k.value, k.value.lineno) for k in value.keywords if k.arg]
        return entries

    def _jit_of(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        return self.resolve(target) in JIT

    def _find_kernels(self, nodes: list[ast.AST]) -> None:
        for fn in self.functions.values():
            for deco in fn.decorator_list:
                if self._jit_of(deco):
                    self.kernels[fn.name] = Kernel(fn, deco, decorated=True)
                    self.local_launches.add(fn.name)
                elif self.resolve(deco.func if isinstance(deco, ast.Call) else deco) in SUBGRAPH:
                    self.subgraphs[fn.name] = fn
        for node in nodes:  # call form: k = pypto.frontend.jit(...)(impl) or jit(impl)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                self._call_form(node)

    def _call_form(self, node: ast.Assign) -> None:
        call = node.value
        assert isinstance(call, ast.Call)
        jit = call.func
        if not (self._jit_of(jit) and call.args and isinstance(call.args[0], ast.Name)):
            return
        fn = self.functions.get(call.args[0].id)
        if fn is not None and fn.name not in self.kernels:
            self.kernels[fn.name] = Kernel(fn, jit, decorated=False)
        self.local_launches.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def _find_imported_launches(self, nodes: list[ast.AST], siblings: Mapping[str, frozenset[str]]) -> None:
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and not _is_library(node.module or ""):
                source = (node.module or "").rpartition(".")[2]
                for alias in node.names:
                    local = alias.asname or alias.name
                    if node.module and _is_sibling(source, siblings):
                        exported = siblings.get(source)  # None: an `_impl` module we have not seen
                        if exported is None or alias.name in exported:
                            self.launch_names.add(local)
                    elif _is_sibling(alias.name, siblings):  # from . import op_impl
                        self.launch_modules[local] = siblings.get(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    leaf = alias.name.rpartition(".")[2]
                    if not _is_library(alias.name) and _is_sibling(leaf, siblings):
                        self.launch_modules[alias.asname or alias.name] = siblings.get(leaf)

    def _kernel_closure(self) -> set[str]:
        """Names of jit functions, subgraphs and every module function they call (kernel code)."""
        todo = [*self.kernels, *self.subgraphs]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name not in self.functions:
                continue
            seen.add(name)
            for call in calls_in(self.functions[name].body):
                if isinstance(call.func, ast.Name) and call.func.id in self.functions:
                    todo.append(call.func.id)
        return seen

    def _find_launchers(self) -> set[str]:
        """Host functions that call a kernel launch, directly or through another launcher."""
        found: set[str] = set()
        callees: dict[str, set[str]] = {}
        for name, fn in self.functions.items():
            if name not in self.kernel_code:
                calls = list(calls_in(fn.body))
                callees[name] = {c.func.id for c in calls if isinstance(c.func, ast.Name)}
                if any(self.is_launch(c) for c in calls):
                    found.add(name)
        while grown := {name for name, called in callees.items() if name not in found and called & found}:
            found |= grown
        return found


def _is_library(module: str) -> bool:
    """Whether an import names the standard library or pypto/torch themselves (`pypto.pypto_impl`)."""
    root = module.partition(".")[0]
    return root in sys.stdlib_module_names or root in ("pypto", "torch", "torch_npu", "numpy")


def _is_sibling(module: str, siblings: Mapping[str, frozenset[str]]) -> bool:
    """Whether `module` may hold the submission's kernels: a linted sibling, or any `*_impl` module."""
    if module == "pypto_impl":  # pypto's own C++ binding
        return False
    return module in siblings or (module.endswith(IMPL_SUFFIX) and module not in sys.stdlib_module_names)


def _import_map(nodes: list[ast.AST]) -> dict[str, str]:
    """Local name -> qualified name for every import in the file (function-level imports included)."""
    names: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    root = alias.name.partition(".")[0]
                    names[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names
