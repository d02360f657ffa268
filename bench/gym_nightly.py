"""A gym-sized nightly through the real service (issue 23): three nights of `crosscheck ci run`.

    python bench/gym_nightly.py [--operators 100] [--quick] [--keep DIR]

Generates an N-operator checkout in pypto-gym's layout (`tests/ops/<model>/<Op>/` beside
`src/pypto_gym/ops/pypto_tile/<model>/<op>/<op>_impl.py`) from our own example kernels (vector,
gelu, swiglu, row mean, rmsnorm, softmax, matmul, attention), renamed and reshaped, routed as gym
packages, test scripts and test modules, 1 to 8 cases each (mostly small, a tail of 8-32 MiB tensors).
Starts `crosscheck up` (temp data dir, one SIM worker) and times `crosscheck ci run` three times:
the first night, an unchanged second night, a third after changing one operator's kernel.
For the first night it sums the stored per-case stage timings (GET /jobs/{id}/report) and compares
them with pypto's own floor: each case's wrapper call (compile + cost model) timed in plain warm
processes, measured in the same run before and after the nights (`--floor-sample K` to time K cases).
Last line: `gym-nightly first=… second/first=… third/first=… overhead=… with_evidence=…`: overhead is the
first night's summed case time (the job's wall) over the floor; with_evidence adds the job leader's
evidence checks after each job, so the harness's own cost shows too.
The checkout itself: bench/gym_nightly_gen.py.
"""
from __future__ import annotations

import sys

# A bench file named as a standard-library module would shadow it (bench/bisect.py did, until renamed):
# the bench folder goes after the standard library on the path, not first.
if sys.path and sys.path[0].rstrip("/").endswith("bench"):
    sys.path.append(sys.path.pop(0))

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx2 as httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import nightly  # noqa: E402  (starts and stops `crosscheck up` like bench/nightly.py)
from gym_nightly_gen import break_some, change_one, generate  # noqa: E402

FLOOR = r'''
import importlib.util, json, sys, time
from pathlib import Path
import torch
ops, sample, out = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def load(path, name):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return getattr(mod, name)
def call(op, case):
    torch.manual_seed(case["seed"])
    xs = [torch.randn(i["shape"], dtype=torch.float32) for i in case["inputs"]]
    start = time.perf_counter(); load(op["impl"], op["name"] + "_wrapper")(*xs)
    return time.perf_counter() - start
work = [(op, k, c) for op in ops for k, c in enumerate(json.loads((Path(op["test_dir"]) / "test_cases.json").read_text())["test_cases"])]
if sample and sample < len(work):
    work = work[:: max(1, len(work) // sample)][:sample]
part, parts = int(sys.argv[4]), int(sys.argv[5])
work = work[part::parts]
call(work[0][0], work[0][2])  # warms the process (the first case is timed again: a fresh module)
times = {f'{op["name"]}/{k}': call(op, c) for op, k, c in work}
Path(out).write_text(json.dumps(times))
'''


def floor(made: list[dict[str, Any]], sample: int, tmp: Path, parts: int) -> dict[str, float]:
    """Seconds of each case's plain wrapper call (pypto compile + SIM cost model), key 'op/index'.

    `parts` warm processes at once, as many as the worker runs cases at once, so both see the same load."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp), "TILE_FWK_OUTPUT_DIR": str(tmp / "floor-out")}
    procs = [subprocess.Popen([sys.executable, "-c", FLOOR, json.dumps(made), str(sample), str(tmp / f"floor{p}.json"),
                               str(p), str(parts)], cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for p in range(parts)]
    for proc in procs:
        if proc.wait(timeout=7200):
            raise SystemExit(f"floor failed: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
    shutil.rmtree(tmp / "floor-out", ignore_errors=True)
    return {k: v for p in range(parts) for k, v in json.loads((tmp / f"floor{p}.json").read_text()).items()}


def ci_run(url: str, data: Path, checkout: Path, key: str) -> tuple[float, str]:
    env = {**nightly.env_for(data), "CROSSCHECK_TOKEN": json.loads((data / "tokens.json").read_text())["admin"]}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "server.cli", "ci", "run", str(checkout), "--server", url,
                           "--suite", "gym-nightly", "--run-key", key, "--label", "branch=main",
                           "--fail-on", "never"], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=4 * 3600, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ci run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took, done.stdout + done.stderr


def api_get(client: httpx.Client, path: str, **params: Any) -> Any:
    answer = client.get("/api/v1" + path, params=params)
    answer.raise_for_status()
    return answer.json()


def results(client: httpx.Client, run_id: int) -> list[dict[str, Any]]:
    items, cursor = [], None
    while True:
        page = api_get(client, f"/suite-runs/{run_id}/results", limit=5000, **({"cursor": cursor} if cursor else {}))
        items += page["items"]
        cursor = page.get("next_cursor")
        if cursor is None:
            return items


def stage_profile(client: httpx.Client, rows: list[dict[str, Any]]) -> tuple[dict[str, float], list[tuple]]:
    """Seconds per stage summed over the night's cases, and (floor key, case s, sim stage s, evidence s) per case
    that ran. A case's duration is the job's wall time; the leader's evidence checks come after it, so they are
    counted beside it (report["evidence"]["duration_s"]), not inside."""
    stages: dict[str, float] = defaultdict(float)
    ran = []
    for job_id in sorted({r["job_id"] for r in rows if r["source"] == "worker" and r["job_id"]}):
        job, report = api_get(client, f"/jobs/{job_id}"), api_get(client, f"/jobs/{job_id}/report")
        shared = set()
        for case in report["cases"]:
            for st in case["stages"]:
                if st["name"] in ("syntax", "lint"):  # per operator, copied into each case
                    shared.add((st["name"], st["duration_s"]))
                else:
                    stages[st["name"]] += st["duration_s"]
            inside = sum(st["duration_s"] for st in case["stages"] if st["name"] not in ("syntax", "lint"))
            evidence = float((case.get("evidence") or {}).get("duration_s") or 0)
            stages["evidence (leader, after the job)"] += evidence
            stages["fork, sandbox, verdict (rest of the case)"] += max(0.0, case["duration_s"] - inside)
            m = re.fullmatch(r"(?:test_)?level(\d+)", case["case"])
            if m and case["verdict"] != "not_run":
                sim = sum(st["duration_s"] for st in case["stages"] if st["name"] == "sim")
                ran.append((f"{job['operator']}/{m.group(1)}", case["duration_s"], sim, evidence))
        for name, seconds in shared:
            stages[name] += seconds
        stages["worker: bundle, store (job - report)"] += max(0.0, (job["timings"]["duration_s"] or 0)
                                                              - report["duration_s"])
    return dict(stages), ran


def against_floor(ran: list[tuple], floor_s: dict[str, float], made: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per size class: [our case s, our sim stage s, floor s, cases, the leader's evidence s]."""
    large = {f"{m['name']}/{k}" for m in made for k, c in
             enumerate(json.loads((Path(m["test_dir"]) / "test_cases.json").read_text())["test_cases"])
             if "large" in c["description"]}
    classes: dict[str, list[float]] = {"small": [0.0] * 5, "large (8-32 MiB tensors)": [0.0] * 5}
    for key, case_s, sim_s, evidence_s in ran:
        if key in floor_s:
            for i, v in enumerate((case_s, sim_s, floor_s[key], 1, evidence_s)):
                classes["large (8-32 MiB tensors)" if key in large else "small"][i] += v
    return classes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--operators", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="20 operators")
    parser.add_argument("--keep", type=Path, help="generate the checkout and data dir here and keep them")
    parser.add_argument("--defects", action="store_true", help="break 3 operators (is a failing one reused too?)")
    parser.add_argument("--floor-sample", type=int, default=0, metavar="K", help="time K cases for the floor (0: all)")
    args = parser.parse_args()
    n = 20 if args.quick else args.operators
    tmp_holder = None if args.keep else tempfile.TemporaryDirectory(prefix="bench-gym-nightly-")
    root = args.keep.resolve() if args.keep else Path(tmp_holder.name)  # type: ignore[union-attr]
    root.mkdir(parents=True, exist_ok=True)
    checkout = root / "checkout"
    made = generate(checkout, n)
    broken = break_some(made) if args.defects else []
    from runtime.intake.discover import discover

    started = time.perf_counter()
    found = discover(checkout)
    discovery_s = time.perf_counter() - started
    routes = Counter(op.route for op in found)
    total_cases = sum(m["cases"] for m in made)
    print(f"checkout: {n} operators, {total_cases} cases; routes found {dict(routes)}; discovery {discovery_s:.2f} s"
          + (f"; broken on purpose: {', '.join(broken)}" if broken else ""), flush=True)
    parts = min(os.cpu_count() or 1, 4)  # the cases `crosscheck up`'s worker runs at once (CASE_PARALLEL)

    def timed_floor(when: str) -> dict[str, float]:
        (root / f"floor-{when}").mkdir(exist_ok=True)
        started = time.perf_counter()
        got = floor(made, args.floor_sample, root / f"floor-{when}", parts)
        print(f"floor {when}: {len(got)} cases timed in {time.perf_counter() - started:.0f} s by {parts} processes, "
              f"sum {sum(got.values()):.1f} s (load average after: {os.getloadavg()[0]:.1f})", flush=True)
        return got

    # The worker's calculator is built before the nights, as on a host that ran before: on a fresh one the worker
    # builds it in the background and the cases it runs meanwhile have no graph evidence (docs/ci.md).
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "runtime", "calculator", "build"], check=True, stdout=subprocess.DEVNULL)
    print(f"graph-verify calculator ready in {time.perf_counter() - started:.1f} s (built once per host)", flush=True)
    floor_before = timed_floor("before")
    data = root / "crosscheck-data"
    proc, url = nightly.start(data)
    nights: list[tuple[str, float, str]] = []
    try:
        for night in ("first", "second"):
            seconds, out = ci_run(url, data, checkout, night)
            nights.append((night, seconds, out))
            print(f"{night}: {seconds:.1f} s (load average after: {os.getloadavg()[0]:.1f})", flush=True)
        changed = change_one(made)
        seconds, out = ci_run(url, data, checkout, "third")
        nights.append((f"third ({changed} changed)", seconds, out))
        print(f"third: {seconds:.1f} s (load average after: {os.getloadavg()[0]:.1f})", flush=True)
        token = json.loads((data / "tokens.json").read_text())["admin"]
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
            runs = sorted(api_get(client, "/suite-runs", limit=10)["items"], key=lambda r: r["id"])
            per_night = [results(client, r["id"]) for r in runs[-3:]]
            stages, ran = stage_profile(client, per_night[0])
    finally:
        nightly.stop(proc)
    change_one(made, undo=True)  # the floor again after the nights (load drifts): the mean of both counts
    floor_after = timed_floor("after")
    floor_s = {k: (v + floor_after[k]) / 2 for k, v in floor_before.items() if k in floor_after}
    classes = against_floor(ran, floor_s, made)
    first = nights[0][1]
    print("\n| night | seconds | vs first | cases | ran | reused | verdicts |\n|---|---|---|---|---|---|---|")
    for (night, seconds, _), rows in zip(nights, per_night):
        source = Counter(r["source"] for r in rows)
        verdicts = ", ".join(f"{v} ×{c}" for v, c in Counter(str(r["verdict"]) for r in rows).most_common())
        print(f"| {night} | {seconds:.1f} | {seconds / first:.3f} | {len(rows)} | {source['worker']} | "
              f"{source['reused']} | {verdicts} |")
    for (night, _, _), rows in zip(nights[1:], per_night[1:]):
        ran = sorted({f"{r['operator']}" for r in rows if r["source"] != "reused"})
        if ran:
            print(f"\n{night}: not reused: {', '.join(ran)}")
    print(f"\nFirst night, seconds summed over its {len(per_night[0])} cases (discovery once, in the client):")
    print("| stage | seconds |\n|---|---|")
    print(f"| discovery (client) | {discovery_s:.2f} |")
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {seconds:.1f} |")
    print(f"| all cases (sum of case durations) | {sum(r['duration_s'] or 0 for r in per_night[0]):.1f} |")
    print(f"\nPer case against the floor (mean of before and after; {parts} at once on both sides; sim = the kernel "
          "call: compile, SIM, graph verify):")
    print("| cases | n | our case s | our sim stage s | evidence s | floor s | case / floor | with evidence |\n"
          "|---|---|---|---|---|---|---|---|")
    for name, (ours, sim, base, count, ev) in [*classes.items(), ("all", [sum(v) for v in zip(*classes.values())])]:
        print(f"| {name} | {count:.0f} | {ours:.1f} | {sim:.1f} | {ev:.1f} | {base:.1f} | "
              f"{ours / base if base else 0:.2f} | {(ours + ev) / base if base else 0:.2f} |")
    ours, _, base, _, ev = (sum(v) for v in zip(*classes.values()))
    overhead = ours / base if base else float("nan")
    with_evidence = (ours + ev) / base if base else float("nan")  # the harness's whole cost per case
    print(f"\ngym-nightly first={first:.1f} second/first={nights[1][1] / first:.3f} "
          f"third/first={nights[2][1] / first:.3f} overhead={overhead:.2f} with_evidence={with_evidence:.2f}")
    if tmp_holder:
        tmp_holder.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
