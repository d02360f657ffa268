"""What this host is: versions, and whether it has an NPU."""
from __future__ import annotations

import glob
import os
import platform
import socket
from importlib import metadata, util
from pathlib import Path

from runtime.report import Environment
from runtime.version import runtime_version


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def cann_version() -> str | None:
    home = os.environ.get("ASCEND_HOME_PATH")
    if not home:
        return None
    for name in ("version.cfg", "version.info"):
        path = Path(home) / name
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                if "version" in line.lower() and "=" in line:
                    return line.split("=", 1)[1].strip()
    return "unknown"


def npu_status() -> tuple[bool, str]:
    """(available, reason). Checks without importing torch_npu, which is slow and noisy."""
    if util.find_spec("torch_npu") is None:
        return False, "torch_npu is not installed"
    if not os.environ.get("ASCEND_HOME_PATH"):
        return False, "CANN not found (ASCEND_HOME_PATH is unset)"
    if not glob.glob("/dev/davinci[0-9]*"):
        return False, "no /dev/davinci* device"
    return True, "ok"


def npu_devices() -> list[int]:
    return sorted(int(p.removeprefix("/dev/davinci")) for p in glob.glob("/dev/davinci[0-9]*"))


def environment(sandbox: dict[str, object] | None = None, device: str | None = None) -> Environment:
    return Environment(
        pypto=_version("pypto"),
        torch=_version("torch"),
        python=platform.python_version(),
        host=socket.gethostname(),
        cann=cann_version(),
        sandbox=dict(sandbox or {}),
        runtime=runtime_version(),
        device=device,
    )
