"""What a warm parent inherits from its starter's environment: an allow-list, nothing else (docs/SECURITY.md).

Kept apart from runtime.warm.client so the run daemon's digest (runtime/warm/daemon_address.py) can be
computed by `crosscheck run`'s thin start without the client's imports.
"""
from __future__ import annotations

import os

# What the warm parent may inherit from its starter, by name or prefix; nothing else.
PARENT_PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
                       "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TMPDIR")
# (With our tests' torch_npu double, also its NPU_DOUBLE_* settings, docs/npu.md §5.)
NPU_PARENT_PREFIXES = ("ASCEND_", "TOOLCHAIN_HOME", "CROSSCHECK_NPU_TEST_DOUBLE")


def parent_environment(mode: str) -> dict[str, str]:
    """The allow-listed part of this process's environment a warm parent of `mode` inherits."""
    env = {k: v for k, v in os.environ.items() if k in PARENT_PASS_THROUGH}
    if mode == "npu":  # CANN's set_env.sh variables; a SIM parent must not see ASCEND_HOME_PATH
        prefixes = NPU_PARENT_PREFIXES + (("NPU_DOUBLE_",) if "CROSSCHECK_NPU_TEST_DOUBLE" in os.environ else ())
        env.update({k: v for k, v in os.environ.items() if k.startswith(prefixes)})
    return env
