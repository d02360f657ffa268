"""The warm parent with the job's view of the host as it was before issue 25's sandbox items.

Started as `python -m tests.hostile.unfixed_host_view FD MODE SCRATCH` (see unfixed_sandbox.py): the
real warm parent, except that its jobs share the host's IPC namespace and /proc, get a private
tmpfs only over the fixed /tmp, /var/tmp and /dev/shm, keep world-writable files and sockets, and
see what `sys.path` names (the starting dir among it) with only closed dirs narrowed.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from runtime.fence import hostview, jobview, sandbox
from runtime.warm import parent


def _old_code_paths() -> list[Path]:
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    paths.update(Path(p) for p in sys.path if p and os.path.isdir(p))
    return sorted(p.resolve() for p in paths if p.exists())


def _old_narrow(view: jobview.View, job_dir: Path, needed: list[Path], closed_too: bool, notes: list[str]) -> None:
    if not closed_too:
        return
    closed = {anc for p in needed for anc in p.parents if anc != Path("/") and jobview._is_closed(anc)}
    for folder in sorted(closed, key=lambda p: len(p.parts), reverse=True):
        children = {folder / p.relative_to(folder).parts[0] for p in needed if p != folder and p.is_relative_to(folder)}
        jobview._expose_through(folder, children, job_dir.resolve())


if __name__ == "__main__":
    sandbox.CLONE_NEWIPC = 0
    jobview.fresh_proc = lambda: None
    hostview.code_paths = _old_code_paths
    hostview.scan_writable = lambda: hostview.Writable(dirs=[Path(d) for d in ("/tmp", "/var/tmp", "/dev/shm")])
    jobview.cover_writable_files = lambda view, notes: None
    jobview.narrow = _old_narrow
    parent.serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
