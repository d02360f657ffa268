"""The warm parent with the job limits as they were before issue 8 item 7 (see unfixed_sandbox.py).

Started as `python -m tests.hostile.unfixed_parent FD MODE SCRATCH`: the real warm parent, except
that its leaders make no cgroup, watch nothing (memory or disk), give the job RLIMIT_AS and
RLIMIT_NPROC only, and leave it the host's /tmp, /var/tmp and /dev/shm (items 7 and 8).
"""
from __future__ import annotations

import resource
import sys

from runtime.fence import jobview
from runtime.fence import sandbox
from runtime.warm import guard, leader, parent


def _old_enter(limits: sandbox.Limits, uid: int | None, groups: list[int] | None = None, **_: object) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (1024, 1024))
        import os

        os.setgroups(list(groups or []))
        os.setgid(uid)
        os.setuid(uid)


if __name__ == "__main__":
    sandbox.enter = _old_enter
    leader.JobCgroup.create = classmethod(lambda cls, *a, **k: (None, "unfixed: no cgroup"))  # type: ignore
    guard.Guard.check = lambda self, pid: None  # type: ignore[method-assign]
    jobview.private_dirs = lambda view, size_bytes, needed, job_dir, notes, files: False  # type: ignore[assignment]
    parent.serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
