"""Compare and the leader's recheck, before and after the fused passes, on large tensors (issue 23).

    python bench/same_metrics.py [--before REV] [--repeat 3] [--mib 32]

Exports `runtime/` of REV (default: the commit before the fused passes) and of the work tree into
temp dirs and times, in fresh processes, alternating old and new (A B A B):
- job: the job's compare stage on a graph-verify case, metrics.compare of the bytes before the
  launch (all NaN: freed memory scrubbed with 0xFF) and of the graph's result against the golden;
- leader: dumps.recheck of the same case's dump (hashes, both compares, pypto's verify numbers).
Each for a float32 output close to its golden and one bit-identical to it. Prints seconds per
repeat and new/old, and checks that both give the same metrics (as JSON text).
"""
from __future__ import annotations

import sys

# bench/ after the standard library on the path: a bench file named as one of its modules would shadow it.
if sys.path and sys.path[0].rstrip("/").endswith("bench"):
    sys.path.append(sys.path.pop(0))

import argparse
import json
import os
import statistics
import subprocess
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEFORE = "b8b66ab"  # the last commit with the old compare and recheck

INNER = r'''
import hashlib, json, sys, time
from pathlib import Path
import torch
import runtime
from runtime.evidence import dumps, metrics
assert runtime.__file__.startswith(sys.argv[4]), runtime.__file__
from runtime.fence.jobfiles import JobFiles
mib, kind, work = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
torch.manual_seed(0)
golden = torch.randn(mib * 1024 * 1024 // 4 // 4096, 4096)
out = golden.clone() if kind == "identical" else golden * (1 + 1e-5 * torch.randn_like(golden))
before = torch.full_like(golden, float("nan"))
tol = (1e-3, 1e-5)
start = time.perf_counter()
job = [metrics.compare(before, golden, *tol), metrics.compare(out, golden, *tol)]
job_s = time.perf_counter() - start
entry = dumps.OutputDump(golden=golden, output=out, before=before, first_post_sha256="x",
                         last_post_sha256=dumps.sha256(out), last_launch=0, last_arg=1)
dumps.write(work, [entry])
sha = hashlib.sha256((work / "golden-0.bin").read_bytes()).hexdigest()
start = time.perf_counter()
leader = dumps.recheck(JobFiles(work, None), tol, True, [sha])
leader_s = time.perf_counter() - start
print(json.dumps({"job_s": job_s, "leader_s": leader_s, "job": job, "leader": leader}, sort_keys=True))
'''


def export(rev: str | None, into: Path) -> Path:
    """`runtime/` as of `rev` (None: the work tree) under `into`."""
    into.mkdir(parents=True)
    if rev is None:
        subprocess.run(["cp", "-r", str(REPO / "runtime"), str(into)], check=True)
    else:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "runtime"], check=True,
                                 capture_output=True).stdout
        with tempfile.TemporaryFile() as f:
            f.write(archive)
            f.seek(0)
            tarfile.open(fileobj=f).extractall(into)
    return into


def once(tree: Path, mib: int, kind: str, tmp: Path) -> dict:
    work = Path(tempfile.mkdtemp(dir=tmp))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-P", "-c", INNER, str(mib), kind, str(work), str(tree)], env=env, cwd=tmp,
                          capture_output=True, text=True, check=True)
    subprocess.run(["rm", "-rf", str(work)], check=True)
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mib", type=int, default=32, help="size of each tensor")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-same-metrics-") as name:
        tmp = Path(name)
        trees = {"old": export(args.before, tmp / "old"), "new": export(None, tmp / "new")}
        print("| output | side | old s | new s | new/old |\n|---|---|---|---|---|")
        for kind in ("close", "identical"):
            seconds: dict[str, dict[str, list[float]]] = {"job": {"old": [], "new": []},
                                                          "leader": {"old": [], "new": []}}
            results = {}
            for _ in range(args.repeat):
                for which in ("old", "new"):
                    got = once(trees[which], args.mib, kind, tmp)
                    seconds["job"][which].append(got["job_s"])
                    seconds["leader"][which].append(got["leader_s"])
                    results[which] = (json.dumps(got["job"], sort_keys=True), json.dumps(got["leader"], sort_keys=True))
            if results["old"] != results["new"]:
                raise SystemExit(f"{kind}: the metrics differ between old and new")
            for side, by in seconds.items():
                old, new = statistics.median(by["old"]), statistics.median(by["new"])
                print(f"| {args.mib} MiB fp32, {kind} | {side} | {old:.2f} | {new:.2f} | {new / old:.2f} |", flush=True)
    print(f"load average at end: {os.getloadavg()}; medians of {args.repeat}, old and new alternating; "
          "metrics identical as JSON text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
