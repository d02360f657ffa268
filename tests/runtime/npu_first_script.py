"""The command line of an NPU-first test script in pypto's examples' style, shared by the tests' own scripts:
`SCRIPT [CASE] [--list] [--run_mode npu|sim]`, a CASES dict of `group::case` functions taking the device; under
`--run_mode npu` the card comes from TILE_FWK_DEVICE_ID and torch_npu. Braces doubled: it ends a str.format
template."""

MAIN = '''def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--run_mode", default="npu", choices=["npu", "sim"])
    args = parser.parse_args()
    if args.list:
        for key in CASES:
            print(f"  {{key}}")
        return
    device = "cpu"
    if args.run_mode == "npu":
        card = int(os.environ["TILE_FWK_DEVICE_ID"])
        import torch_npu  # noqa: F401
        torch.npu.set_device(card)
        device = f"npu:{{card}}"
    for key, fn in CASES.items():
        if args.case in (None, key):
            fn(device)


if __name__ == "__main__":
    main()
'''
