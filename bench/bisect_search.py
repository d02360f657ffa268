"""A bisect over 32 commits of which 4 touch the operator, against running all 32 revisions, side by side
in one run (issue 22).

    python bench/bisect_search.py [--case ID] [--naive N]

The history (a real git repository in a temp dir, built by tests/runtime/bisect_history.py): commit 1
adds scale_add (examples/); commits 8 and 16 change a comment in its kernel; commit 23 breaks its maths
(x * 3.0, as examples/wrong_maths); commit 29 changes a comment again; the other 27 touch only a README.
Bisect: `crosscheck bisect REPO --op scale_add --good <1> --bad <32>`, one process. All revisions:
`crosscheck run REPO --op scale_add` at each revision in turn, one process each, as a loop by hand (or
`git bisect run` over every commit) would. Both SIM with graph verify. `--naive N` runs only the first N
revisions of the all-revisions side and scales its time to 32 (said so in the output).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.runtime.bisect_history import RIGHT, WRONG, commit, git, new_repo, operator_files  # noqa: E402

COMMITS = 32
TOUCHES = {8: "# tiles of 32 x 64\n", 16: "# tiles of 32 x 64, row-major\n", 29: "# maths changed at 23\n"}
BREAKS = 23


def build(root: Path, cases: list[str]) -> list[str]:
    repo = new_repo(root / "repo")
    shas = [commit(repo, "add scale_add", {**operator_files(cases=cases), "README.md": "1\n"})]
    kernel, note = None, ""
    for n in range(2, COMMITS + 1):
        if n == BREAKS:
            kernel = WRONG
            shas.append(commit(repo, f"{n}: scale_add's maths", operator_files(WRONG, note, cases)))
        elif n in TOUCHES:
            note = TOUCHES[n]
            shas.append(commit(repo, f"{n}: a comment", operator_files(kernel or RIGHT, note, cases)))
        else:
            shas.append(commit(repo, f"{n}: readme", {"README.md": f"{n}\n"}))
    return shas


def crosscheck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=REPO, capture_output=True, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="scale_add_32x64", help="the one case each run runs ('' for both)")
    parser.add_argument("--naive", type=int, default=COMMITS, metavar="N", help="run only N revisions one by one")
    args = parser.parse_args()
    cases = [args.case] if args.case else []
    with tempfile.TemporaryDirectory(prefix="bench-bisect-") as tmp:
        shas = build(Path(tmp), cases)
        repo = Path(tmp) / "repo"
        start = time.perf_counter()
        proc = crosscheck("bisect", str(repo), "--op", "scale_add", "--good", shas[0], "--bad", shas[-1])
        bisect_s = time.perf_counter() - start
        found = [line for line in proc.stdout.splitlines() if line.startswith("first bad commit:")]
        assert proc.returncode == 0 and found and shas[BREAKS - 1] in found[0], proc.stdout + proc.stderr
        steps = [line for line in proc.stdout.splitlines() if line.startswith("[")]
        runs = sum(" run: " in line for line in steps)
        tree = Path(tmp) / "tree"
        git(repo, "worktree", "add", "-q", "--detach", str(tree), shas[0])
        start = time.perf_counter()
        for sha in shas[:args.naive]:
            git(tree, "checkout", "-q", "--detach", sha)
            crosscheck("run", str(tree), "--op", "scale_add")
        naive_s = (time.perf_counter() - start) * COMMITS / args.naive
    scaled = "" if args.naive == COMMITS else f" (measured over {args.naive}, scaled to {COMMITS})"
    print(f"bisect: {len(steps)} revisions looked at, {runs} run, {bisect_s:.1f} s")
    print(f"all {COMMITS} revisions: {COMMITS} runs, {naive_s:.1f} s{scaled}")
    print(f"ratio bisect / all: {bisect_s / naive_s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
