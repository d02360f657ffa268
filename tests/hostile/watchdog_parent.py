"""The real warm parent on a host where no cgroup can be made (a container without cgroup access):
its leaders fall back to the RSS watchdog (runtime.warm.guard). Started as
`python -m tests.hostile.watchdog_parent FD MODE SCRATCH` by WatchdogWarmParent.
"""
from __future__ import annotations

import sys

from runtime.warm import leader, parent

if __name__ == "__main__":
    leader.JobCgroup.create = classmethod(  # type: ignore[method-assign,assignment]
        lambda cls, *a, **k: (None, "no job cgroup (this host's cgroup fs is not ours); memory is watched"))
    parent.serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
