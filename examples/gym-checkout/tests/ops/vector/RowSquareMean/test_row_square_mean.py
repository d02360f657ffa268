#!/usr/bin/env python3
"""row_square_mean precision test for the NPU: `python test_row_square_mean.py` runs every level.

NPU only, as some real checkout tests are: no --run_mode, the device set with torch.npu.set_device,
inputs moved to npu:N, torch.npu.synchronize() after the kernel, and one test_level* function per level
that returns whether it passed.
"""
import json
import os
import sys

import torch
import torch_npu  # noqa: F401  (registers the npu device)
from numpy.testing import assert_allclose

_root = os.path.dirname(os.path.abspath(__file__))
while not os.path.isdir(os.path.join(_root, "src")):
    _root = os.path.dirname(_root)
sys.path.insert(0, os.path.join(_root, "src", "pypto_gym", "ops", "pypto_tile"))

from row_square_mean_golden import row_square_mean_golden  # noqa: E402
from vector.row_square_mean.row_square_mean_impl import row_square_mean  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _device():
    device_id = int(os.environ.get("TILE_FWK_DEVICE_ID", "0"))
    torch.npu.set_device(device_id)
    return f"npu:{device_id}"


def _case(level):
    with open(os.path.join(HERE, "test_cases.json")) as f:
        return next(c for c in json.load(f)["test_cases"] if c["id"] == level)


def _run(level, device):
    case = _case(level)
    torch.manual_seed(case["seed"])
    x = torch.randn(case["input"]["x_shape"], dtype=torch.float32).to(device)
    out = row_square_mean(x)
    torch.npu.synchronize()
    expected = row_square_mean_golden(x.cpu())
    try:
        assert_allclose(out.cpu().numpy(), expected.numpy(), rtol=case["rtol"], atol=case["atol"])
    except AssertionError as exc:
        print(f"  {level}: FAIL {exc}")
        return False
    print(f"  {level}: ok")
    return True


def test_level0(device):
    return _run("level0", device)


def test_level1(device):
    return _run("level1", device)


def main():
    device = _device()
    ok = all([test(device) for test in (test_level0, test_level1)])
    print("[PRECISION_PASS]" if ok else "[PRECISION_FAIL]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
