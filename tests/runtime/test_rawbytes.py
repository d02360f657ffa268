"""runtime.evidence.rawbytes: a tensor's bytes read straight from memory equal torch's own, whatever is patched."""
from __future__ import annotations

import hashlib

import pytest
import torch

from runtime.evidence import rawbytes


def _torch_bytes(t: torch.Tensor) -> bytes:
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


@pytest.mark.parametrize("make", [
    lambda: torch.randn(4, 6),
    lambda: torch.randn(4, 6).t(),  # strided
    lambda: torch.randn(8, 8)[1::2, ::3],  # offset and steps
    lambda: torch.randn(3, 1, 5).expand(3, 4, 5),  # zero strides
    lambda: torch.randn(5, 4).to(torch.bfloat16),
    lambda: torch.arange(10, dtype=torch.int64)[3:],
    lambda: torch.zeros(0, 7),
])
def test_raw_bytes_equal_torchs(make):
    t = make()
    assert rawbytes.read(t) == _torch_bytes(t)
    lay = rawbytes.layout(t)
    copy = rawbytes.as_tensor(rawbytes.read_layout(lay), lay)
    assert copy.dtype == t.dtype and list(copy.shape) == list(t.shape) and torch.equal(copy, t.contiguous())


def test_patched_torch_numpy_and_hashlib_change_nothing(monkeypatch):
    t = torch.randn(16, 16)
    golden = torch.zeros(16, 16)
    expected = _torch_bytes(t)
    for name in ("detach", "to", "contiguous", "clone", "cpu", "numpy", "view", "reshape", "data_ptr"):
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, **k: golden)
    monkeypatch.setattr(hashlib, "sha256", lambda *a: None)
    monkeypatch.setattr(torch, "frombuffer", lambda *a, **k: golden)
    assert rawbytes.read(t) == expected
    assert rawbytes.sha256(rawbytes.read(t)) == hashlib.new("sha256", expected).hexdigest()


def test_a_subclass_cannot_answer_for_its_memory():
    class Liar(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "data_ptr":
                return 0
            return super().__torch_function__(func, types, args, kwargs or {})

    t = torch.randn(4, 4)
    assert rawbytes.read(t.as_subclass(Liar)) == _torch_bytes(t)


def test_a_layout_taken_before_keeps_reading_the_memory_it_found():
    t = torch.randn(4, 4)
    lay = rawbytes.layout(t)
    before = rawbytes.read_layout(lay)
    t.set_(torch.zeros(4, 4))  # re-pointed: the old storage is still held by the layout
    assert rawbytes.read_layout(lay) == before and rawbytes.read(t) != before


def test_device_and_meta_tensors_are_not_read():
    with pytest.raises(rawbytes.NotReadable):
        rawbytes.layout(torch.empty(3, device="meta"))
