"""The default memory limit per case follows the host: a share of its memory (docs/run-daemon.md,
"Large cases"). `python -c 'from runtime.fence.host_memory import describe; print(describe())'`."""
from __future__ import annotations

from pathlib import Path

MEMORY_SHARE = 0.5  # of the host's memory (or of our cgroup's limit, when lower), per case
NEED_FACTOR = 4  # a case's declared tensors x this ~ what its job holds (inputs, outputs, golden, dumps)
GIB = 2**30


def host_memory_bytes() -> int:
    """MemTotal, or the memory limit of the cgroup we run in when that is lower."""
    total = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            total = int(line.split()[1]) * 1024
    for limit in _cgroup_limits():
        if 0 < limit < total:
            total = limit
    return total


def _cgroup_limits() -> list[int]:
    out = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0":
            candidates = [Path("/sys/fs/cgroup") / parts[2].lstrip("/") / "memory.max"]
        elif "memory" in parts[1].split(","):
            candidates = [Path("/sys/fs/cgroup/memory") / parts[2].lstrip("/") / "memory.limit_in_bytes"]
        else:
            continue
        for path in candidates:
            try:
                text = path.read_text().strip()
            except OSError:
                continue
            if text.isdigit():
                out.append(int(text))
    return out


def default_memory_bytes() -> int:
    return int(host_memory_bytes() * MEMORY_SHARE)


def describe() -> str:
    """How the default was reached, for the report: `50% of the host's 23.4 GiB`."""
    return f"{MEMORY_SHARE:.0%} of the host's {host_memory_bytes() / GIB:.1f} GiB"


def runs_alone(declared_bytes: int, memory_bytes: int, parallel: int) -> bool:
    """A case whose job would need more than its share of the limit among `parallel` runs alone."""
    return parallel > 1 and declared_bytes * NEED_FACTOR > memory_bytes / parallel
