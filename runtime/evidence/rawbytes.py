"""A tensor's bytes read straight from its memory, through references taken before any submission runs.

The harness's after-launch snapshot, its hashes and the dumps the leader recompares must not be
redirectable by the submission's Python in the same process (docs/SECURITY.md, "Evidence out of the
kernel's reach"). So nothing here calls a method looked up on `torch.Tensor`, a `torch` or `numpy`
module function, or `hashlib` at the time of use: every function is captured when this module is
imported, in the warm parent, before the job exists. The memory is read with `ctypes.string_at`
from the pointer, sizes and strides that `torch._C.TensorBase`'s own descriptors report (an
immutable type: its methods cannot be replaced), with `__torch_function__` dispatch switched off,
so a patched `Tensor.detach`/`to`/`clone`, a tensor subclass or a torch function mode changes nothing.

A `Layout` records where a launch argument's bytes live before the launch and keeps its storage
alive, so a kernel that re-points the tensor (`set_`, `resize_`) during the launch does not move
the harness's read.
"""
from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass
from typing import Any

import numpy
import torch

_TB = torch._C.TensorBase
_DATA_PTR = _TB.data_ptr
_NUMEL = _TB.numel
_ELEMENT_SIZE = _TB.element_size
_STRIDE = _TB.stride
_SIZE = _TB.size
_UNTYPED_STORAGE = _TB.untyped_storage
_STORAGE_PTR = torch._C.StorageBase.data_ptr
_DEVICE = _TB.__dict__["device"].__get__
_IS_META = _TB.__dict__["is_meta"].__get__
_DTYPE = _TB.__dict__["dtype"].__get__
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
_STRING_AT = ctypes.string_at
_CHAR = ctypes.c_char
_NDARRAY = numpy.ndarray
_UINT8 = numpy.dtype("uint8")
_TOBYTES = numpy.ndarray.tobytes
_SHA256 = hashlib.sha256
_FROMBUFFER = torch.frombuffer
_VIEW = _TB.view
_RESHAPE = _TB.reshape
_TORCH_UINT8 = torch.uint8
_BYTEARRAY = bytearray
_TUPLE, _INT, _STR, _ZIP, _REVERSED = tuple, int, str, zip, reversed
_EMPTY = torch.empty


class NotReadable(ValueError):
    """The tensor has no CPU memory to read (a meta or device tensor)."""


@dataclass(frozen=True)
class Layout:
    """Where a tensor's elements are: base pointer, sizes, strides (elements), item size, dtype."""

    ptr: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int
    dtype: Any
    storage: Any = None  # held so the memory stays valid while the layout is used


def on_cpu(t: Any) -> bool:
    with _NO_TORCH_FUNCTION():
        return _STR(_DEVICE(t)) == "cpu" and not _IS_META(t)


def layout(t: Any) -> Layout:
    """The tensor's layout now, holding its storage. Raises NotReadable off the CPU."""
    with _NO_TORCH_FUNCTION():
        if not on_cpu(t):
            raise NotReadable(f"a {_STR(_DEVICE(t))} tensor")
        return Layout(_INT(_DATA_PTR(t)), _TUPLE(_INT(s) for s in _SIZE(t)), _TUPLE(_INT(s) for s in _STRIDE(t)),
                      _INT(_ELEMENT_SIZE(t)), _DTYPE(t), _UNTYPED_STORAGE(t))


def read_layout(lay: Layout) -> bytes:
    """The bytes at `lay`, in C order."""
    numel = 1
    for s in lay.sizes:
        numel *= s
    if numel == 0:
        return b""
    contiguous, expect = True, 1
    for size, stride in _ZIP(_REVERSED(lay.sizes), _REVERSED(lay.strides)):
        if size != 1 and stride != expect:
            contiguous = False
        expect *= size
    if contiguous:
        return _STRING_AT(lay.ptr, numel * lay.itemsize)
    span = 1
    for size, stride in _ZIP(lay.sizes, lay.strides):
        span += (size - 1) * stride
    memory = (_CHAR * (span * lay.itemsize)).from_address(lay.ptr)
    view = _NDARRAY(shape=(*lay.sizes, lay.itemsize), dtype=_UINT8, buffer=memory,
                    strides=(*(s * lay.itemsize for s in lay.strides), 1))
    return _TOBYTES(view)


def read(t: Any) -> bytes:
    """The tensor's bytes now, in C order."""
    return read_layout(layout(t))


def storage_ptr(t: Any) -> int:
    """Where the tensor's storage starts: which launch argument a returned tensor shares memory with."""
    with _NO_TORCH_FUNCTION():
        return _INT(_STORAGE_PTR(_UNTYPED_STORAGE(t)))


def sha256(data: bytes) -> str:
    return _SHA256(data).hexdigest()


def as_tensor(data: bytes, lay: Layout) -> Any:
    """A private CPU tensor holding `data` with `lay`'s dtype and sizes (a snapshot)."""
    with _NO_TORCH_FUNCTION():
        flat = _FROMBUFFER(_BYTEARRAY(data), dtype=_TORCH_UINT8) if data else _EMPTY(0, dtype=_TORCH_UINT8)
        return _RESHAPE(_VIEW(flat, lay.dtype), lay.sizes)
