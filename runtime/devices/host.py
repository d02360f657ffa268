"""What this host is: versions, and whether (and how) it has an NPU (docs/npu.md §1).

Nothing here imports torch_npu: that is slow, noisy and, before a fork, unsafe. The job process
imports it (runtime.devices.device); the worker's start-up probe does so in a subprocess (runtime.devices.npu_probe).
"""
from __future__ import annotations

import glob
import os
import platform
import socket
from dataclasses import dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Any

from runtime.devices import npu_smi
from runtime.errors import SubmissionError
from runtime.report import Environment
from runtime.version import runtime_version

# Set only by our own tests: the directory of the torch_npu/npu-smi test double (tests/npu_double/).
# It is the one way the double is accepted; every result it produces says so (docs/npu.md §5).
TEST_DOUBLE_ENV = "CROSSCHECK_NPU_TEST_DOUBLE"
TEST_DOUBLE_MARKER = "CROSSCHECK_TEST_DOUBLE"  # a file in the double's package dir, and a module attribute
DRIVER_VERSION_FILE = Path("/usr/local/Ascend/driver/version.info")
DEVICE_GLOB = "davinci[0-9]*"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def cann_home() -> Path | None:
    """The CANN toolkit that `set_env.sh` selected (ASCEND_HOME_PATH, or ASCEND_TOOLKIT_HOME)."""
    for key in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        value = os.environ.get(key)
        if value:
            return Path(value)
    return None


def _key_value(path: Path, key: str) -> str | None:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip().lower() == key:
            return value.strip().strip('"') or None
    return None


def cann_version(home: Path | None = None) -> str | None:
    """The toolkit's version: `<home>/<arch>-linux/ascend_toolkit_install.info` (version=...), or
    the older `version.cfg`/`version.info` files; None without CANN, "unknown" when none is readable."""
    home = home if home is not None else cann_home()
    if home is None:
        return None
    candidates = [*sorted(home.glob("*-linux/ascend_toolkit_install.info")), home / "version.cfg",
                  home / "version.info", home / "compiler" / "version.info", home / "runtime" / "version.info"]
    for path in candidates:
        value = _key_value(path, "version")
        if value:
            return value
    return "unknown"


def driver_version(smi: npu_smi.SmiInfo | None = None) -> str | None:
    """The Ascend driver's version (its version.info, else the npu-smi header)."""
    return _key_value(DRIVER_VERSION_FILE, "version") or (smi.driver if smi else None)


def test_double_dir() -> Path | None:
    value = os.environ.get(TEST_DOUBLE_ENV)
    return Path(value).resolve() if value else None


def _torch_npu_origin() -> Path | None:
    spec = util.find_spec("torch_npu")
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    return Path(locations[0] if locations else str(spec.origin)).resolve()


def is_test_double(origin: Path) -> bool:
    """A torch_npu from our tests: marked, or living under a tests/ directory."""
    package = origin if origin.is_dir() else origin.parent
    return (package / TEST_DOUBLE_MARKER).exists() or "tests" in origin.parts


def device_dir() -> Path:
    """Where the device nodes are: /dev, or the test double's dev/ when it is in use."""
    double = test_double_dir()
    return double / "dev" if double is not None else Path("/dev")


def npu_devices() -> list[int]:
    """Device ids with a /dev/davinciN node (davinci_manager and friends are not cards)."""
    ids = []
    for path in glob.glob(str(device_dir() / DEVICE_GLOB)):
        suffix = Path(path).name.removeprefix("davinci")
        if suffix.isdigit():
            ids.append(int(suffix))
    return sorted(ids)


def npu_status() -> tuple[bool, str]:
    """(available, reason). A quick check, without importing torch_npu; the reason names what is missing."""
    origin = _torch_npu_origin()
    if origin is None:
        return False, "torch_npu is not installed"
    if is_test_double(origin):
        double = test_double_dir()
        if double is None or not origin.is_relative_to(double):
            return False, (f"the torch_npu at {origin} is PTO Crosscheck's test double; refusing it "
                           f"(only our tests may load it, with {TEST_DOUBLE_ENV})")
    home = cann_home()
    if home is None:
        return False, "CANN not found (ASCEND_HOME_PATH is unset; source CANN's set_env.sh)"
    if not home.is_dir():
        return False, f"CANN not found (ASCEND_HOME_PATH={home} does not exist)"
    if not npu_devices():
        return False, f"no {device_dir() / 'davinci*'} device (pass the cards into the container)"
    return True, "ok"


def parse_device_list(text: str) -> list[int]:
    """"0-7", "0,2,4" or "0-3,6" as a sorted list of card ids; ValueError names a bad part."""
    ids: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        low, sep, high = part.partition("-")
        if not low.strip().isdigit() or (sep and not high.strip().isdigit()):
            raise ValueError(f"bad device list {text!r}: {part!r} is not a card id or a range like 0-7")
        first, last = int(low), int(high) if sep else int(low)
        if last < first:
            raise ValueError(f"bad device list {text!r}: the range {part!r} runs backwards")
        ids.update(range(first, last + 1))
    return sorted(ids)


@dataclass(frozen=True)
class DeviceChoice:
    id: int
    source: str  # "--device" | "TASK_DEVICE" | "TILE_FWK_DEVICE_ID" | "default"


def choose_device(option: int | None, env: dict[str, str] | None = None) -> DeviceChoice:
    """The card an NPU run uses: the option, else TASK_DEVICE (npu-taskqueue's assignment), else
    TILE_FWK_DEVICE_ID (the pypto convention, docs/pypto.md §5), else 0."""
    env = dict(os.environ if env is None else env)
    if option is not None:
        choice = DeviceChoice(option, "--device")
    else:
        for key in ("TASK_DEVICE", "TILE_FWK_DEVICE_ID"):
            raw = env.get(key, "").strip()
            if raw:
                if not raw.isdigit():
                    raise SubmissionError(f"{key}={raw!r} is not a device id (a whole number like 0)")
                choice = DeviceChoice(int(raw), key)
                break
        else:
            choice = DeviceChoice(0, "default")
    if choice.id < 0:
        raise SubmissionError(f"device id {choice.id} is negative")
    devices = npu_devices()
    if devices and choice.id not in devices:
        raise SubmissionError(f"NPU device {choice.id} (from {choice.source}) does not exist; this host has "
                              f"device(s) {', '.join(map(str, devices))}")
    return choice


def npu_fingerprint(device: DeviceChoice) -> dict[str, Any]:
    """CANN, driver and SoC of the card a run uses, for the report's environment."""
    text, problem = npu_smi.run(smi_executable())
    smi = npu_smi.parse(text) if text else None
    card = smi.card(device.id) if smi else None
    fingerprint: dict[str, Any] = {
        "device_id": device.id, "device_source": device.source,
        "cann": cann_version(), "driver": driver_version(smi),
        "torch_npu": "test double" if test_double_dir() is not None else _version("torch_npu"),
        "soc": card.name if card else None, "card_health": card.health if card else None,
        "test_double": test_double_dir() is not None,
    }
    if problem or (smi and card is None):
        fingerprint["npu_smi"] = problem or f"npu-smi lists no card with device id {device.id}"
    return fingerprint


def smi_executable() -> str:
    double = test_double_dir()
    return str(double / "bin" / "npu-smi") if double is not None else "npu-smi"


def environment(sandbox: dict[str, object] | None = None, device: str | None = None,
                npu: dict[str, Any] | None = None) -> Environment:
    return Environment(
        pypto=_version("pypto"),
        torch=_version("torch"),
        python=platform.python_version(),
        host=socket.gethostname(),
        cann=cann_version(),
        sandbox=dict(sandbox or {}),
        runtime=runtime_version(),
        device=device,
        npu=dict(npu or {}),
    )
