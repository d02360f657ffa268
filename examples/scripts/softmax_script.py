#!/usr/bin/env python3
"""Row softmax as a stand-alone PyPTO example script (the hicann/pypto examples convention).

Usage:
    python softmax_script.py --list
    python softmax_script.py [case_id] --run_mode npu|sim

The kernel takes a [rows, cols] fp32 tensor with a DYNAMIC row count, walks it in ROW_TILE-row blocks
(pypto.loop + pypto.view + pypto.assemble) and writes exp(x - rowmax) / sum(exp(x - rowmax)) for each row.

Conventions kept on purpose, because real example scripts behave this way:
- `--run_mode` is read from sys.argv before the module-level decorator binds the run mode.
- NPU mode needs TILE_FWK_DEVICE_ID; without it the script prints a hint and exits 0 having run nothing.
- The golden comparison (numpy assert_allclose) only happens in NPU mode. In SIM the kernel is compiled and
  cost-modelled but the output is never written, so "passed" in SIM proves structure only. The max difference is
  printed in both modes.
"""
import argparse
import os
import sys

import numpy as np
import pypto
import torch
from numpy.testing import assert_allclose

ROW_TILE = 8
RTOL = 3e-3
ATOL = 3e-3


def _peek_run_mode_from_argv(default: str = "npu") -> str:
    """Find --run_mode in sys.argv early: the decorator below needs it at import time."""
    argv = sys.argv[1:]
    for pos, arg in enumerate(argv):
        if arg.startswith("--run_mode="):
            value = arg.split("=", 1)[1]
        elif arg == "--run_mode" and pos + 1 < len(argv):
            value = argv[pos + 1]
        else:
            continue
        if value in ("npu", "sim"):
            return value
    return default


RUN_MODE = pypto.RunMode.SIM if _peek_run_mode_from_argv() == "sim" else pypto.RunMode.NPU


@pypto.frontend.jit(runtime_options={"run_mode": RUN_MODE})
def softmax_rows_kernel(
    x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
):
    rows = x.shape[0]
    cols = x.shape[1]
    # Each vec tile holds ROW_TILE whole rows, so a row's max and sum never cross tiles.
    pypto.set_vec_tile_shapes(ROW_TILE, cols)
    for blk in pypto.loop((rows + ROW_TILE - 1) // ROW_TILE, name="ROW_BLOCKS", idx_name="blk"):
        first = blk * ROW_TILE
        valid = [pypto.min(first + ROW_TILE, rows) - first, cols]
        block = pypto.view(x, [ROW_TILE, cols], [first, 0], valid_shape=valid)
        numer = pypto.exp(block - pypto.amax(block, dim=-1, keepdim=True))
        pypto.assemble(numer / pypto.sum(numer, dim=-1, keepdim=True), [first, 0], out)


def read_device_id():
    """TILE_FWK_DEVICE_ID as an int, or None (with a hint printed) when it is missing or malformed."""
    raw = os.environ.get("TILE_FWK_DEVICE_ID")
    if raw is None:
        print("NPU mode needs the device to use, e.g.:")
        print("  export TILE_FWK_DEVICE_ID=0")
        return None
    try:
        return int(raw)
    except ValueError:
        print(f"ERROR: TILE_FWK_DEVICE_ID must be an integer, got {raw!r}")
        return None


def run_softmax_case(shape, device_id=None) -> None:
    """Run the kernel on one random input and report how far it is from torch.softmax."""
    on_npu = RUN_MODE == pypto.RunMode.NPU and device_id is not None
    device = f"npu:{device_id}" if on_npu else "cpu"
    x = torch.randn(shape, dtype=torch.float32, device=device)
    out = torch.zeros(shape, dtype=torch.float32, device=device)

    softmax_rows_kernel(x, out)

    expected = torch.softmax(x.cpu(), dim=-1).numpy()
    got = out.cpu().numpy()
    print(f"  input shape: {tuple(x.shape)}, output shape: {tuple(out.shape)}")
    print(f"  Max difference: {np.abs(got - expected).max():.6e}")
    if RUN_MODE == pypto.RunMode.NPU:
        assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    print("  ✓ softmax case passed")


def test_softmax_small(device_id=None) -> None:
    run_softmax_case((32, 64), device_id)


def test_softmax_wide(device_id=None) -> None:
    run_softmax_case((16, 512), device_id)


EXAMPLES = {
    "softmax::test_softmax_small": ("32 rows of 64, four 8-row blocks", test_softmax_small),
    "softmax::test_softmax_wide": ("16 rows of 512, two 8-row blocks", test_softmax_wide),
}


def parse_args():
    parser = argparse.ArgumentParser(description="Row softmax in PyPTO (example script)")
    parser.add_argument("example_id", nargs="?", help="run only this example (default: all)")
    parser.add_argument("--list", action="store_true", help="list the example ids and exit")
    parser.add_argument("--run_mode", nargs="?", default="npu", choices=["npu", "sim"],
                        help="npu (needs TILE_FWK_DEVICE_ID) or sim (cost model, outputs not written)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.list:
        print("Available examples:")
        for example_id, (description, _) in sorted(EXAMPLES.items()):
            print(f"  ID: {example_id}")
            print(f"     {description}")
        return 0

    if args.example_id is not None and args.example_id not in EXAMPLES:
        print(f"ERROR: unknown example id {args.example_id!r}; valid ids: {', '.join(sorted(EXAMPLES))}")
        return 1
    chosen = [args.example_id] if args.example_id else sorted(EXAMPLES)

    device_id = None
    if args.run_mode == "npu":
        device_id = read_device_id()
        if device_id is None:
            return 0  # the upstream convention: nothing ran, yet exit 0
        import torch_npu  # noqa: F401  (registers the npu device with torch)
        torch.npu.set_device(device_id)

    for example_id in chosen:
        print(f"Running {example_id} ({args.run_mode})")
        EXAMPLES[example_id][1](device_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
