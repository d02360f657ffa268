"""Peak processes + threads of each crosscheck job cgroup (cgroup v1 pids) while something runs beside it.

Run: `python docs/repro/job_threads.py SECONDS &` then `crosscheck run ...`; prints the six highest peaks.
docs/SECURITY.md ("Processes") has what it measured.
"""
from __future__ import annotations

import glob
import os
import sys
import time

ROOT = "/sys/fs/cgroup/pids/crosscheck"  # runtime/fence/cgroup.py GROUP under the v1 pids mount


def main(seconds: float) -> None:
    peak: dict[str, int] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for group in glob.glob(f"{ROOT}/job-*"):
            try:
                now = int(open(f"{group}/pids.current").read())
            except (OSError, ValueError):
                continue  # the job ended between the glob and the read
            peak[group] = max(now, peak.get(group, 0))
        time.sleep(0.005)
    for group, most in sorted(peak.items(), key=lambda kv: -kv[1])[:6]:
        print(os.path.basename(group), most)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
