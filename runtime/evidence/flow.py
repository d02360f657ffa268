"""In the job process: which tensor storages hold data that came from a kernel launch (docs/SECURITY.md).

While the wrapper runs, a torch dispatch mode marks every storage an aten op writes from a marked
input; the instrumentation marks every storage a launch wrote. A returned tensor that no launch was
handed counts as the kernel's only when its storage is marked (runtime.job.child). Only storage
addresses are recorded, never data, and none is kept alive: a mark is dropped the moment its storage
is freed, so a later, unmarked tensor that gets the same address is not taken for a marked one.

Fail safe: a submission that leaves or disables the mode stops the marking, so its returned tensors
stay its own (suspect_fake_pass), never the other way round.

Scripts: a float read with `.item()` from a marked tensor is a KernelFloat, and a compare of one
that directly decides an `assert` statement (`assert max_diff < tol`) is reported as a compare of that
launch's output (docs/realops.md §9). Any other use of the float claims nothing.
"""
from __future__ import annotations

import contextlib
import dis
import sys
import weakref
from types import CodeType, FrameType
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_leaves

from runtime.evidence import rawbytes


# aten ops that move, view, cast, allocate, fill or gather values without computing new ones: what the gym lets
# a KernelBench operator do outside its jit kernel (docs/kernelbench.md §3, S4). Any other op computes.
MOVES = frozenset("""
view _unsafe_view reshape _reshape_alias view_as expand expand_as permute transpose t squeeze unsqueeze slice select
as_strided narrow flatten unflatten split split_with_sizes chunk unbind unfold movedim contiguous clone _to_copy to
copy_ copy detach alias lift_fresh lift_fresh_copy empty empty_like empty_strided new_empty new_empty_strided zeros
zeros_like new_zeros ones ones_like new_ones full full_like new_full fill_ zero_ scalar_tensor cat stack
constant_pad_nd pad index_select gather repeat _local_scalar_dense item is_nonzero set_ resize_ _has_compatible_shallow_copy_type
""".split())


class KernelFlow(TorchDispatchMode):
    """Storages derived from what a launch wrote, by the aten ops that ran while the mode was on.

    With `maths`, it also notes the ops that compute values outside the kernel: on what later feeds a launch
    ("before") or on what a launch wrote ("after"), each once with the submission's line that ran it (S4).
    """

    def __init__(self, maths: bool = False, src_dir: str = "") -> None:
        super().__init__()
        self._storages: dict[int, int] = {}  # address of a live marked storage -> the launch it derives from
        self.maths, self.src_dir = maths, src_dir
        self._computed: dict[int, tuple[str, str]] = {}  # live storage address -> (the op that computed it, where)
        self.outside: list[dict[str, str]] = []  # S4 findings: {"side", "op", "where"}

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch would wrap __torch_dispatch__ to keep its compiler out, importing torch._dynamo on the first
        # op: seconds per job. Nothing here is compiled.
        return False

    def mark(self, t: torch.Tensor, launch: int = -1) -> None:
        if isinstance(t, torch.Tensor) and not t.is_meta:
            ptr = rawbytes.storage_ptr(t)
            if ptr not in self._storages:
                # torch keeps one Python object per storage: it dies with the storage, and so does the mark.
                weakref.finalize(t.untyped_storage(), self._storages.pop, ptr, None)
            self._storages[ptr] = max(launch, self._storages.get(ptr, -1))

    def marked(self, t: torch.Tensor) -> bool:
        return isinstance(t, torch.Tensor) and not t.is_meta and rawbytes.storage_ptr(t) in self._storages

    def source(self, t: torch.Tensor) -> int:
        """The latest launch whose output `t`'s storage derives from (-1: not known)."""
        return self._storages.get(rawbytes.storage_ptr(t), -1)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if self.maths:
            self._note_maths(func, args, kwargs, result)
        if self._storages:
            sources = [self.source(t) for t in tree_leaves((args, kwargs)) if self.marked(t)]
            if sources:
                # The op's results, and whatever it wrote in place or through out=, now derive from the kernel.
                for t in tree_leaves(result):
                    if isinstance(t, torch.Tensor):
                        self.mark(t, max(sources))
        return result


    def _note_maths(self, func: Any, args: Any, kwargs: Any, result: Any) -> None:
        name = func.overloadpacket.__name__
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and not t.is_meta]
        if not inputs:
            return
        computed = [self._computed[p] for p in map(rawbytes.storage_ptr, inputs) if p in self._computed]
        if name in MOVES:
            if computed:  # moved or cast, still computed outside the kernel
                for t in tree_leaves(result):
                    self._note(t, computed[0])
            return
        where = self._where()
        if any(self.marked(t) for t in inputs):
            self._finding("after", name, where)
        for t in tree_leaves(result):
            self._note(t, (name, where))

    def _note(self, t: Any, what: tuple[str, str]) -> None:
        if isinstance(t, torch.Tensor) and not t.is_meta:
            ptr = rawbytes.storage_ptr(t)
            if ptr not in self._computed:
                weakref.finalize(t.untyped_storage(), self._computed.pop, ptr, None)
            self._computed[ptr] = what

    def _where(self) -> str:
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            if self.src_dir and frame.f_code.co_filename.startswith(self.src_dir):
                return f"{frame.f_code.co_filename[len(self.src_dir):].lstrip('/')}:{frame.f_lineno}"
            frame = frame.f_back
        return ""

    def _finding(self, side: str, op: str, where: str) -> None:
        if len(self.outside) < 20 and not any(f["side"] == side and f["op"] == op for f in self.outside):
            self.outside.append({"side": side, "op": op, "where": where})

    def launching(self, read: list[torch.Tensor]) -> None:
        """The arguments a launch only read: one computed outside the kernel is maths before it (S4)."""
        for t in read:
            found = self._computed.get(rawbytes.storage_ptr(t)) if isinstance(t, torch.Tensor) else None
            if found:
                self._finding("before", *found)


_active: KernelFlow | None = None


def start(maths: bool = False, src_dir: str = "") -> KernelFlow:
    """A fresh record for one wrapper call; enter it (`with`) around the call."""
    global _active
    _active = KernelFlow(maths, src_dir)
    return _active


def launched(written: list[torch.Tensor], launch: int = -1, read: list[torch.Tensor] | None = None) -> None:
    """The instrumentation's report of a launch: these arguments' storages hold what it wrote."""
    if _active is not None:
        if _active.maths and read:
            _active.launching(read)
        for t in written:
            _active.mark(t, launch)


_paused = [0]


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Every dispatch mode and our float taint off across a launch: pypto's torch calls run as without us."""
    _paused[0] += 1
    try:
        with _disable_current_modes():
            yield
    finally:
        _paused[0] -= 1


class KernelFloat(float):
    """A Python float read from a tensor that derives from launch `launch`'s output."""

    __slots__ = ("launch",)
    launch: int

    def __lt__(self, other: Any) -> Any:
        return _compared(self, "<", other, float.__lt__(self, other))

    def __le__(self, other: Any) -> Any:
        return _compared(self, "<=", other, float.__le__(self, other))

    def __gt__(self, other: Any) -> Any:
        return _compared(self, ">", other, float.__gt__(self, other))

    def __ge__(self, other: Any) -> Any:
        return _compared(self, ">=", other, float.__ge__(self, other))


Hook = Callable[[KernelFloat, str, float, bool, str], None]
_on_compare: list[Hook] = []
_READS = (torch._C.TensorBase.item,)  # float(t) must return an exact float
_ASSERT_JUMPS = ("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_IF_TRUE")  # the assert's own condition
_FAIL_JUMPS = ("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_IF_FALSE")  # `assert a < t and ...`: false raises
_decides: dict[tuple[CodeType, int], str] = {}


class ScalarTaint(TorchFunctionMode):
    """Makes a float read from a marked tensor a KernelFloat (within a KernelFlow record)."""

    def __init__(self, kernel_flow: KernelFlow, on_compare: Hook) -> None:
        super().__init__()
        self.kernel_flow = kernel_flow
        self.on_compare = on_compare

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        if (func in _READS and not _paused[0] and type(result) is float and args
                and self.kernel_flow.marked(args[0])):
            tainted = KernelFloat(result)
            tainted.launch = self.kernel_flow.source(args[0])
            return tainted
        return result

    def __enter__(self) -> "ScalarTaint":
        _on_compare.append(self.on_compare)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        _on_compare.remove(self.on_compare)
        super().__exit__(*exc)


def _compared(value: KernelFloat, op: str, other: Any, held: Any) -> Any:
    """Report a compare whose bool is the condition of an `assert` statement, as the script wrote it."""
    if held is NotImplemented or _paused[0] or not _on_compare or not isinstance(other, (int, float)):
        return held
    frame = sys._getframe(2)
    role = _assert_role(frame)
    # A conjunct decides the assert only when false; when true, a later condition does.
    if role == "condition" or (role == "conjunct" and not held):
        _on_compare[-1](value, op, float(other), bool(held), f"{frame.f_code.co_filename}:{frame.f_lineno}")
    return held


def _assert_role(frame: FrameType) -> str:
    """What the running compare is to an `assert` statement, read from its bytecode (CPython 3.11+).

    "condition": the assert's jump reads it; "conjunct": if false it jumps to the AssertionError; else "".
    """
    key = (frame.f_code, frame.f_lasti)
    if key not in _decides:
        role = ""
        ops = list(dis.get_instructions(frame.f_code))
        raises = {ins.offset for ins in ops if ins.opname == "LOAD_ASSERTION_ERROR"}
        for i, ins in enumerate(ops[:-2]):
            if ins.offset == frame.f_lasti:
                if ins.opname == "COMPARE_OP" and ops[i + 1].opname in _ASSERT_JUMPS and ops[i + 2].offset in raises:
                    role = "condition"
                elif ins.opname == "COMPARE_OP" and ops[i + 1].opname in _FAIL_JUMPS and ops[i + 1].argval in raises:
                    role = "conjunct"
                break
        _decides[key] = role
    return _decides[key]
