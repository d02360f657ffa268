#!/usr/bin/env python3
"""axpy precision test, NPU first: `python test_axpy.py [case_id] [--list] [--run_mode npu|sim]`.

Written the way real checkout tests are: torch_npu imported at the top even for SIM, the kernel found
by walking up to the checkout's src/, test_cases.json read from the folder the test is run from, and
assert_allclose in both modes (in SIM the output holds what the simulator left there).
"""
import argparse
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

from axpy_golden import axpy_golden  # noqa: E402
from vector.axpy.axpy_impl import axpy_wrapper  # noqa: E402


def run_case(case, device):
    torch.manual_seed(case["seed"])
    shape, dtype = case["input"]["shape"], getattr(torch, case["input"]["dtype"])
    x = torch.randn(shape, dtype=dtype).to(device)
    y = torch.randn(shape, dtype=dtype).to(device)
    out = axpy_wrapper(x, y)
    expected = axpy_golden(x.cpu(), y.cpu())
    assert_allclose(out.cpu().numpy(), expected.numpy(), rtol=case["rtol"], atol=case["atol"])
    print(f"  {case['id']}: ok")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("case_id", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--run_mode", default="npu", choices=["npu", "sim"])
    parser.add_argument("--json", default="test_cases.json")
    args = parser.parse_args()
    with open(args.json) as f:
        cases = json.load(f)["test_cases"]
    if args.list:
        for case in cases:
            print(f"  {case['id']}  - {case['description']}")
        return
    device = "cpu"
    if args.run_mode == "npu":
        device_id = int(os.environ.get("TILE_FWK_DEVICE_ID", "0"))
        torch.npu.set_device(device_id)
        device = f"npu:{device_id}"
    for case in cases:
        if args.case_id in (None, case["id"]):
            run_case(case, device)


if __name__ == "__main__":
    main()
