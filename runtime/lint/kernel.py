"""Rules on jit kernels: their signatures, and the tiling order their traced events show."""
from __future__ import annotations

import ast

from runtime.lint.module import Kernel, Module, own_nodes, params
from runtime.lint.rules import Findings
from runtime.lint.shapes import STATIC, is_tensor_annotation
from runtime.lint.tiles import check_tiles
from runtime.lint.values import TENSOR
from runtime.lint.walker import (
    CUBE_TILES,
    LOOP,
    MATMUL,
    NO_TILE_CALLS,
    STITCH,
    UNKNOWN,
    VEC_OP,
    VEC_TILES,
    WRITE,
    Event,
    Walker,
)

# pypto functions whose first argument is a size or scalar, not a tensor.
SCALAR_ARG_CALLS = frozenset({"arange", "full", "zeros", "ones"})


def check_kernels(m: Module, f: Findings) -> None:
    """Run every kernel rule on every jit function and pypto.frontend.function of the module."""
    if m.kernels:
        _future_annotations(m, f)
    for kernel in m.kernels.values():
        used = _params_used_as_tensors(m, kernel)
        _signature(m, f, kernel, used)
        walker = Walker(m, f, kernel.fn, known={p: TENSOR for p in used}, specs={p: STATIC for p in used})
        events = walker.run() + _decorator_stitch(m, kernel)
        _vec_tiles(m, f, kernel, events)
        check_tiles(m, f, kernel)
        _cube_tiles(m, f, kernel, events)
        _stitch(f, kernel, events)
        _rebound_outputs(m, f, kernel)
        if not any(e.kind in (VEC_OP, MATMUL, WRITE, UNKNOWN) for e in events):
            f.add("empty-kernel", kernel.fn.lineno,
                  f"Kernel '{kernel.fn.name}' neither computes nor writes anything, so its outputs keep "
                  "whatever the host put in them; do the operator's maths in the kernel and write the outputs.")
    for subgraph in m.subgraphs.values():  # also checked where a kernel calls them; findings dedupe
        Walker(m, f, subgraph).run()


def _future_annotations(m: Module, f: Findings) -> None:
    for node in m.tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__" and \
                any(alias.name == "annotations" for alias in node.names):
            f.add("future-annotations", node.lineno,
                  "'from __future__ import annotations' turns the pypto.Tensor annotations into strings, "
                  "so pypto raises \"Non-tensor parameter ... must not be a torch.Tensor\"; remove the import.")


def _signature(m: Module, f: Findings, kernel: Kernel, used: set[str]) -> None:
    fn = kernel.fn
    if fn.returns is not None:
        annotation = f"-> {ast.unparse(fn.returns)}"
        f.add("return-annotation", fn.returns.lineno,
              f"Kernel '{fn.name}' has a return annotation ({annotation}), which pypto rejects with 'Return "
              "annotation is not allowed' (every pypto from r0.2.0 on; only r0.1.x took one): remove it, kernels "
              "write their outputs into out parameters.", subject=annotation)
    first_plain: ast.arg | None = None
    for p in params(fn):
        tensor = is_tensor_annotation(m, p.annotation)
        if not tensor and _is_torch_annotation(m, p.annotation):
            tensor = True  # meant as a tensor: the annotation is the one thing to fix
            f.add("missing-tensor-annotation", p.lineno,
                  f"Parameter '{p.arg}' is annotated torch.Tensor, so pypto treats it as a non-tensor and raises "
                  "\"Non-tensor parameter ... must not be a torch.Tensor\"; annotate it with pypto.Tensor(...).")
        elif p.annotation is None and p.arg in used:
            tensor = True
            f.add("missing-tensor-annotation", p.lineno,
                  f"Parameter '{p.arg}' is used as a tensor but has no annotation, so pypto treats it as a "
                  "non-tensor and rejects the torch tensor passed in; annotate it with pypto.Tensor(...).")
        if tensor and first_plain is not None:
            f.add("non-tensor-before-tensor", first_plain.lineno,
                  f"Non-tensor parameter '{first_plain.arg}' comes before tensor parameter '{p.arg}', which "
                  "pypto rejects at decoration; put all tensor parameters first.")
            first_plain = None  # one finding per offending parameter
        elif not tensor and first_plain is None:
            first_plain = p


def _is_torch_annotation(m: Module, ann: ast.expr | None) -> bool:
    return ann is not None and m.resolve(ann) == "torch.Tensor"


def _params_used_as_tensors(m: Module, kernel: Kernel) -> set[str]:
    """Unannotated parameters the body uses like tensors: `.shape`, or the first argument of a pypto op."""
    plain = {p.arg for p in params(kernel.fn) if p.annotation is None}
    used: set[str] = set()
    for node in own_nodes(kernel.fn.body):
        if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name):
            used.add(node.value.id)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            name = m.pypto_name(node.func)
            if name is not None and _is_vector_op(name):
                used.add(node.args[0].id)
    return used & plain


def _is_vector_op(name: str) -> bool:
    """Whether `pypto.<name>` is an op on tensors (so its first argument is a tensor)."""
    excluded = NO_TILE_CALLS | SCALAR_ARG_CALLS
    return "." not in name and name not in excluded and not name.startswith(("set_", "get_"))


def _decorator_stitch(m: Module, kernel: Kernel) -> list[Event]:
    """stitch_* keys in the jit decorator's option dicts."""
    entries = m.option_entries(kernel.jit)
    return [Event(STITCH, line, key) for key, _, line in entries if key.startswith("stitch_")]


def _vec_tiles(m: Module, f: Findings, kernel: Kernel, events: list[Event]) -> None:
    # Tile shapes set at module level stay in force for every kernel (measured in SIM).
    if m.sets_at_module_level("set_vec_tile_shapes"):
        return
    tiles = next((e for e in events if e.kind == VEC_TILES), None)
    ops = [e for e in events if e.kind == VEC_OP]
    name = kernel.fn.name
    if tiles is None and ops and not _unknown_before(events, ops[0]):
        f.add("ops-before-vec-tiles", ops[0].line,
              f"Kernel '{name}' runs {ops[0].what} but never calls pypto.set_vec_tile_shapes, so pypto fails "
              "with F21004 'op tile shape not set'; set positive vec tile shapes at the top of the kernel.")
    elif tiles is not None:
        early = [e for e in events[: events.index(tiles)] if e.kind == VEC_OP]
        if early and not _unknown_before(events, early[0]):
            f.add("ops-before-vec-tiles", early[0].line,
                  f"Kernel '{name}' runs {early[0].what} here, before pypto.set_vec_tile_shapes (line {tiles.line}), "
                  "so pypto fails with F21004 'tile shape not set'; move set_vec_tile_shapes above the first op.")


def _cube_tiles(m: Module, f: Findings, kernel: Kernel, events: list[Event]) -> None:
    matmul = next((e for e in events if e.kind == MATMUL), None)
    if matmul is None or any(e.kind == CUBE_TILES for e in events) or _unknown_before(events, matmul):
        return
    if m.sets_at_module_level("set_cube_tile_shapes"):
        return
    f.add("matmul-without-cube-tiles", matmul.line,
          f"Kernel '{kernel.fn.name}' runs {matmul.what or 'a matmul'} without pypto.set_cube_tile_shapes, "
          "which fails in every mode with FC4000 'Invalid tile values: kL0=0'; set cube tiles [L0, L1] per axis.")


def _stitch(f: Findings, kernel: Kernel, events: list[Event]) -> None:
    stitch = next((e for e in events if e.kind == STITCH), None)
    if stitch is None or any(e.kind in (LOOP, MATMUL) for e in events):
        return
    f.add("stitch-on-simple-kernel", stitch.line,
          f"Option '{stitch.what}' on kernel '{kernel.fn.name}', which has no pypto.loop and no matmul, makes "
          "the NPU fail with 'launch aicpu failed: 107003'; drop the stitch_* options for simple vector kernels.",
          subject=stitch.what)


def _rebound_outputs(m: Module, f: Findings, kernel: Kernel) -> None:
    """Tensor parameters whose first use is `p = ...`: the caller's tensor is never written (pypto accepts it)."""
    tensors = {p.arg for p in params(kernel.fn) if is_tensor_annotation(m, p.annotation)}
    seen: set[str] = set()  # names met so far, in source order
    for node in own_nodes(kernel.fn.body):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            stored = {n.id for t in targets for n in ast.walk(t)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            read_here = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            for name in sorted((stored & tensors) - seen - read_here):
                f.add("output-rebound", node.lineno,
                      f"Kernel '{kernel.fn.name}' rebinds its tensor parameter '{name}' before using it, so the "
                      f"caller's tensor is never written; write into it with {name}[:] = ... or pypto.assemble(...).")
        if isinstance(node, ast.Name):
            seen.add(node.id)


def _unknown_before(events: list[Event], event: Event) -> bool:
    """Whether a call into unseen code (which may set the tiles) comes before `event`."""
    return any(e.kind == UNKNOWN for e in events[: events.index(event)])
