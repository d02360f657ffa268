"""docs/bisect.md §4: is the SIM cost model's estimate the same when the same kernel runs again?

Usage: python docs/repro/costmodel_repeat.py [--repeat 3] [example ...]   (default: scale_add softmax matmul)
Runs `python -m runtime run examples/<example> --no-graph-verify --json -` REPEAT times, each in a fresh
process, and prints each case's AICore µs and total cycles per run, and whether they were identical.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def estimates(example: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "runtime", "run", str(REPO / "examples" / example),
                          "--no-graph-verify", "--json", "-"], cwd=REPO, capture_output=True, text=True)
    report = json.loads(out.stdout)
    return {c["case"]: (c["cost_model"] or {}).get("aicore_time_us") and
            (c["cost_model"]["aicore_time_us"], c["cost_model"]["total_cycles"]) for c in report["cases"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("examples", nargs="*", default=["scale_add", "softmax", "matmul"])
    args = parser.parse_args()
    for example in args.examples:
        runs = [estimates(example) for _ in range(args.repeat)]
        for case in runs[0]:
            seen = [r.get(case) for r in runs]
            same = "identical" if len(set(seen)) == 1 else "DIFFERENT"
            print(f"{example} / {case}: " + ", ".join(f"{s[0]} us {s[1]} cycles" if s else "none" for s in seen)
                  + f"  -> {same}")


if __name__ == "__main__":
    main()
