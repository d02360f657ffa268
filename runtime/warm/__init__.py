"""The warm parent: a process that imported torch and pypto once and forks one job per request.

A cold `python kernel.py --run_mode sim` spends 3.5-5 s importing torch and pypto; a fork of the
warm parent starts with both loaded.

    client.py  WarmParent: starts the warm parent and sends it jobs (in the runner or worker)
    parent.py  the warm parent's loop: one job leader per request, several at once
    leader.py  per job: isolate, fork the job process, enforce the wall clock, collect events

Per request:  warm parent --fork--> job leader (privileged; namespaces, timeout, rusage)
                                        --fork--> job process (limits, job uid, runs the case)
"""
from typing import Any

__all__ = ["WarmParent", "WarmParentError"]


def __getattr__(name: str) -> Any:
    # Loaded when asked for: `crosscheck run`'s thin start imports runtime.warm.daemon_address alone
    # (runtime/cli/handoff.py).
    if name in __all__:
        from runtime.warm import client

        return getattr(client, name)
    raise AttributeError(f"module 'runtime.warm' has no attribute {name!r}")
