"""pypto's own example scripts, run directly and through the installed `crosscheck run` (issue 26).

    python bench/pypto_examples.py --examples DIR [--only TEXT] [--json FILE]

DIR is a local copy of hicann/pypto's `examples/` (or `models/`) tree, never committed. A script is a file
with a `__main__` guard whose own-folder import closure imports pypto. Per script, side by side in one run:
the direct run (`python SCRIPT --run_mode sim` from its folder, or no argument where it has no such flag) and
`crosscheck run SCRIPT --mode sim --json` from a scratch directory. One markdown row each: the direct exit
code and seconds, our verdicts, our exit code, how many cases carry graph evidence (graph verify pass or
fail), how many agree with the script's own compare (bench/README.md says how that is read), and our
seconds over the direct run's.
"""
from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.intake import imports, testmodule  # noqa: E402

GRAPH_EVIDENCE = ("pass", "fail")


def scripts(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        if "__main__" not in text:
            continue
        closure = imports.closure(path.parent, [path], [path.parent])
        if any("import pypto" in (path.parent / f).read_text(encoding="utf-8") for f in closure):
            found.append(path)
    return found


def direct(script: Path, timeout: float) -> tuple[int, float]:
    args = testmodule.run_mode_args(script, "sim")
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, script.name, *args], cwd=script.parent, capture_output=True,
                              timeout=timeout)
        code = done.returncode
    except subprocess.TimeoutExpired:
        code = -9
    return code, time.perf_counter() - start


def crosscheck(cli: str, script: Path, scratch: Path, timeout: float) -> tuple[int, float, list[dict]]:
    out = scratch / "report.json"
    out.unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        code = subprocess.run([cli, "run", str(script), "--mode", "sim", "--json", str(out)], cwd=scratch,
                              capture_output=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = -9
    seconds = time.perf_counter() - start
    try:
        cases = json.loads(out.read_text())["cases"]
    except (OSError, ValueError, KeyError):
        cases = []
    return code, seconds, cases


def agrees(case: dict) -> bool | None:
    """Whether graph evidence agrees with the script's own compare; None without graph evidence.

    pass must mean every judged assert passed, fail that one of the script's own checks failed.
    """
    gv = case.get("graph_verify") or {}
    if gv.get("status") not in GRAPH_EVIDENCE:
        return None
    script = case.get("script") or {}
    if gv["status"] == "pass":
        return script.get("asserts_failed", 0) == 0 and script.get("exit_code") == 0
    return script.get("asserts_failed", 0) > 0 or bool(gv.get("own_check"))


def counted(values: list[str]) -> str:
    return ", ".join(f"{v} ×{n}" if n > 1 else v for v, n in Counter(values).items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=Path, required=True, help="a local copy of pypto's examples/ tree")
    parser.add_argument("--only", default="", help="only scripts whose path contains this text")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--reports", type=Path, help="keep each script's crosscheck report here")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    beside = Path(sys.executable).parent / "crosscheck"  # the CLI installed with this Python
    cli = str(beside) if beside.is_file() else shutil.which("crosscheck") or "crosscheck"
    scratch = Path(tempfile.mkdtemp(prefix="pypto-examples-"))
    rows = []
    print("| script | direct exit | direct s | verdicts | exit | graph evidence | agrees | emulated NPU | "
          "s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    total = {"cases": 0, "graph": 0, "agree": 0}
    for script in scripts(args.examples):
        rel = script.relative_to(args.examples).as_posix()
        if args.only not in rel:
            continue
        d_code, d_s = direct(script, args.timeout)
        c_code, c_s, cases = crosscheck(cli, script, scratch, args.timeout)
        if args.reports:
            args.reports.mkdir(parents=True, exist_ok=True)
            (args.reports / (rel.replace("/", "__") + ".json")).write_text(json.dumps(cases, indent=1))
        graph = [c for c in cases if (c.get("graph_verify") or {}).get("status") in GRAPH_EVIDENCE]
        agree = [c for c in graph if agrees(c)]
        emulated = [c for c in graph if (c.get("graph_verify") or {}).get("source") == "emulated_npu_branch"]
        total["cases"] += len(cases)
        total["graph"] += len(graph)
        total["agree"] += len(agree)
        row = {"script": rel, "direct_exit": d_code, "direct_s": round(d_s, 1),
               "verdicts": counted([c["verdict"] for c in cases]), "exit": c_code,
               "cases": len(cases), "graph_evidence": len(graph), "agrees": len(agree),
               "emulated": len(emulated), "seconds": round(c_s, 1), "ratio": round(c_s / max(d_s, 0.01), 1)}
        rows.append(row)
        print(f"| {rel} | {d_code} | {d_s:.1f} | {row['verdicts'] or '-'} | {c_code} | {len(graph)}/{len(cases)} | "
              f"{len(agree)}/{len(graph)} | {len(emulated)} | {c_s:.1f} | {row['ratio']} |", flush=True)
    share = total["graph"] / max(total["cases"], 1)
    print(f"\n{len(rows)} scripts, {total['cases']} cases; graph evidence on {total['graph']} ({share:.0%}), "
          f"agreeing with the script's own compare on {total['agree']}; exit 1 on "
          f"{sum(1 for r in rows if r['exit'] == 1)} script(s)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "total": total}, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
