"""Sandbox code as it was before issue 8 items 3, 7 and 8, kept on purpose to prove the tests can fail.

Each hostile sandbox test runs its attack through the real runtime and asserts it is contained,
then runs the same attack with the matching piece here and asserts the attack works on it.
Never import this from runtime/.
"""
from __future__ import annotations

import os

from runtime.warm import WarmParent


class UnfixedWarmParent(WarmParent):
    """runtime.warm.client before item 3: the warm parent inherited the starter's whole environment."""

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH" or self.mode == "npu"}
        env.update({
            "HOME": str(self.scratch / "home"),
            "PYPTO_HOME": str(self.scratch / "home" / ".pypto"),
            "ASCEND_PROCESS_LOG_PATH": str(self.log_dir),
            "TILE_FWK_OUTPUT_DIR": str(self.scratch / "output"),
            "TILEFWK_CONFIG_PATH": str(self.config_path),
            "OMP_NUM_THREADS": "1",
        })
        return env


class UnfixedLimitsParent(WarmParent):
    """A warm parent whose leaders limit as before items 7 and 8: RLIMIT_AS per process, no cgroup,
    no disk watch, the host's /tmp."""

    parent_module = "tests.hostile.unfixed_parent"


class WatchdogWarmParent(WarmParent):
    """Not unfixed: the fixed warm parent as it runs where no cgroup can be made (RSS watchdog)."""

    parent_module = "tests.hostile.watchdog_parent"


class UnfixedViewParent(WarmParent):
    """A warm parent whose jobs see the host as before issue 25: the host's IPC and /proc, no cover
    for world-writable places but the fixed temp dirs, the starting dir and other jobs' dirs in view."""

    parent_module = "tests.hostile.unfixed_host_view"
