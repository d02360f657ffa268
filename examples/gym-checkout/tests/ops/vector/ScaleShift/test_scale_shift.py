#!/usr/bin/env python3
"""scale_shift precision test: `python test_scale_shift.py [level0 ...]`, `--list` to see the levels.

Written in the shape of some real checkout tests: no --run_mode option (NPU only), the golden and the
kernel imported by importlib.import_module with their dotted names, `--list` and the results written
through `logging` (nothing configures it, so the listing prints nothing), and one test_level*
function per level beside a main() that runs the ones asked for.
"""
import argparse
import importlib
import json
import logging
import os
import sys

import torch
import torch_npu  # noqa: F401  (registers the npu device)
from numpy.testing import assert_allclose

_root = os.path.dirname(os.path.abspath(__file__))
while not os.path.isdir(os.path.join(_root, "src")):
    _root = os.path.dirname(_root)
sys.path.insert(0, os.path.join(_root, "src", "pypto_gym", "ops", "pypto_tile"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

LOG = logging.getLogger(__name__)
scale_shift_golden = importlib.import_module("scale_shift_golden").scale_shift_golden
scale_shift = importlib.import_module("vector.scale_shift.scale_shift_impl").scale_shift

HERE = os.path.dirname(os.path.abspath(__file__))


def _cases():
    with open(os.path.join(HERE, "test_cases.json")) as f:
        return json.load(f)["test_cases"]


def _run(case, device):
    torch.manual_seed(case["seed"])
    x = torch.randn(case["input"]["shape"], dtype=torch.float32).to(device)
    y = scale_shift(x, case["scale"], case["shift"])
    torch.npu.synchronize()
    expected = scale_shift_golden(x.cpu(), case["scale"], case["shift"])
    try:
        assert_allclose(y.cpu().numpy(), expected.numpy(), rtol=case["rtol"], atol=case["atol"])
    except AssertionError as exc:
        LOG.error("%s: FAIL %s", case["id"], exc)
        return False
    LOG.info("%s: ok", case["id"])
    return True


def test_level0(device):
    return _run(_cases()[0], device)


def test_level1(device):
    return _run(_cases()[1], device)


def main():
    parser = argparse.ArgumentParser(description="scale_shift precision test")
    parser.add_argument("cases", nargs="*", help="level ids from test_cases.json")
    parser.add_argument("--list", action="store_true", help="log the levels and exit")
    args = parser.parse_args()
    cases = _cases()
    if args.list:
        for case in cases:
            LOG.info("%s: %s", case["id"], case["description"])
        return 0
    wanted = [c for c in cases if not args.cases or c["id"] in args.cases]
    device_id = int(os.environ.get("TILE_FWK_DEVICE_ID", "0"))
    torch.npu.set_device(device_id)
    ok = all([_run(case, f"npu:{device_id}") for case in wanted])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
