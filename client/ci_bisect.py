"""`crosscheck ci run --bisect`: for each operator that regressed (a worse verdict, or a SIM cost estimate
up by the suite's threshold), bisect between the previous run's `commit` label and this run's, on this
host, within `--bisect-budget` minutes, and name the culprit (docs/ci.md, "Bisecting regressions").

Each bisect is `crosscheck bisect` in its own process (docs/bisect.md); what it cannot decide in the
budget is said so, never guessed.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def culprits(checkout: Path, previous_commit: str | None, commit: str | None, regressed: dict[str, str],
             budget_s: float) -> tuple[dict[str, dict[str, str]], list[str]]:
    """(operator -> {commit, subject, metric}, notes). `regressed` maps an operator to its metric
    (verdict | aicore_us)."""
    if not regressed:
        return {}, []
    if not previous_commit or not commit:
        return {}, ["bisect not run: this run or the previous one has no commit label (--label commit=SHA)"]
    if previous_commit == commit:
        return {}, ["bisect not run: the previous run has the same commit"]
    found: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    deadline = time.monotonic() + budget_s
    for op, metric in sorted(regressed.items()):
        left = deadline - time.monotonic()
        if left <= 0:
            notes.append(f"bisect of {op} not run: the --bisect-budget ran out")
            continue
        with tempfile.TemporaryDirectory(prefix="crosscheck-ci-bisect-") as tmp:
            out = Path(tmp) / "bisect.json"
            cmd = [sys.executable, "-m", "server.cli", "bisect", str(checkout), "--op", op, "--good",
                   previous_commit, "--bad", commit, "--json", str(out), "--metric", metric]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
            except subprocess.TimeoutExpired:
                notes.append(f"bisect of {op} stopped: the --bisect-budget ran out")
                continue
            data = json.loads(out.read_text()) if out.is_file() else {}
        if proc.returncode == 0 and data.get("first_bad_commit"):
            found[op] = {"commit": data["first_bad_commit"], "subject": data.get("subject") or "", "metric": metric}
        else:
            why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            notes.append(f"bisect of {op} found no culprit: {why}")
    return found, notes


def regressed_operators(cmp: dict[str, Any], totals: dict[str, Any]) -> dict[str, str]:
    """Operators with a SIM regression by verdict, or else by the cost model's estimate."""
    out = {ch["operator"]: "verdict" for ch in cmp.get("regressions", []) if ch.get("mode") == "sim"}
    for p in totals.get("perf_regressions") or []:
        out.setdefault(p["operator"], "aicore_us")
    return out


def attach(api: Any, args: Any, final: dict[str, Any], cmp: dict[str, Any],
           results: list[dict[str, Any]]) -> list[str]:
    """Bisect the regressed operators; each culprit goes on its operator's regressed testcases."""
    totals = final.get("totals") or {}
    regressed = regressed_operators(cmp, totals)
    previous = api.json("GET", f"/suite-runs/{cmp['other_id']}").get("commit") if cmp.get("other_id") else None
    found, notes = culprits(args.checkout, previous, final.get("commit"), regressed, args.bisect_budget * 60)
    cases = {(ch["operator"], ch["case"], ch["mode"]) for ch in cmp.get("regressions", [])}
    cases |= {(p["operator"], p["case"], p["mode"]) for p in totals.get("perf_regressions") or []}
    named = {op: f"{c['commit']} {c['subject']}".strip() for op, c in found.items()}
    for r in results:
        if r["operator"] in named and (r["operator"], r["case"], r["mode"]) in cases:
            r["culprit"] = named[r["operator"]]
    if found:
        notes.append(send(api, final["id"], found))
    return [f"culprit of {op}: {named[op]}" for op in sorted(named)] + notes


def send(api: Any, run_id: int, found: dict[str, dict[str, str]]) -> str:
    """Attach the culprits to the suite run (its page and webhook name them); a refusal is said, not fatal."""
    from client.api_client import Refused, Unreachable

    items = [{"operator": op, **c} for op, c in sorted(found.items())]
    try:
        api.json("POST", f"/suite-runs/{run_id}/culprits", json={"items": items})
    except (Refused, Unreachable) as exc:
        return f"culprits not attached to suite run {run_id}: {exc}"
    return f"culprits attached to suite run {run_id}"
