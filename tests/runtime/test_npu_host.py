"""The NPU mode around the device: host checks, the card choice, the fingerprint, the refusal of the
test double in production, and `crosscheck run --mode npu` on the test double (tests/npu_double/).

Nothing here claims NPU precision: the double runs no kernel, and every result it touches says so.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.devices import host
from runtime.errors import SubmissionError
from tests.conftest import EXAMPLES, REPO

pytestmark = pytest.mark.slow  # runs real pypto compiles

DOUBLE = REPO / "tests" / "npu_double"


def double_env(**extra: str) -> dict[str, str]:
    """This environment as a host simulated by the test double (what tests/npu_double/README.md says)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TASK_DEVICE", "TILE_FWK_DEVICE_ID")}
    env.update(CROSSCHECK_NPU_TEST_DOUBLE=str(DOUBLE), ASCEND_HOME_PATH=str(DOUBLE / "cann"),
               PYTHONPATH=os.pathsep.join([str(DOUBLE), str(REPO), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def crosscheck_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtime", "run", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_cpu_host_says_in_one_line_what_is_missing() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH"}
    done = crosscheck_run(str(EXAMPLES / "relu"), "--mode", "npu", env={**env, "COLUMNS": "80"})
    assert done.returncode == 3  # no capable host: infrastructure, not the kernel (runtime/exit_codes.py)
    lines = done.stderr.strip().splitlines()
    assert lines == ["error: no NPU on this host: torch_npu/CANN not found (torch_npu is not installed)"]


def test_the_test_double_is_refused_without_the_tests_consent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(DOUBLE))
    monkeypatch.delenv(host.TEST_DOUBLE_ENV, raising=False)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(DOUBLE / "cann"))
    available, why = host.npu_status()
    assert not available and "PTO Crosscheck's test double; refusing it" in why
    monkeypatch.setenv(host.TEST_DOUBLE_ENV, str(DOUBLE))
    assert host.npu_status() == (True, "ok")
    monkeypatch.setenv(host.TEST_DOUBLE_ENV, str(REPO / "examples"))  # consent to another directory
    assert not host.npu_status()[0]


def test_a_production_job_process_refuses_the_double_on_import() -> None:
    env = double_env()
    del env[host.TEST_DOUBLE_ENV]
    code = "from runtime.devices.device import load_torch_npu\nload_torch_npu()"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "is PTO Crosscheck's test double; refusing it" in done.stderr


def test_host_checks_name_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(DOUBLE))
    monkeypatch.setenv(host.TEST_DOUBLE_ENV, str(DOUBLE))
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    assert host.npu_status() == (False, "CANN not found (ASCEND_HOME_PATH is unset; source CANN's set_env.sh)")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "nope"))
    assert host.npu_status() == (False, f"CANN not found (ASCEND_HOME_PATH={tmp_path / 'nope'} does not exist)")


def test_cann_version_from_the_toolkit_install_info(tmp_path: Path) -> None:
    assert host.cann_version(DOUBLE / "cann") == "8.5.0"
    (tmp_path / "aarch64-linux").mkdir()
    assert host.cann_version(tmp_path) == "unknown"
    (tmp_path / "version.cfg").write_text("# comment\nVersion=7.0.0\n")
    assert host.cann_version(tmp_path) == "7.0.0"


def test_the_card_comes_from_the_option_then_task_device_then_tile_fwk_device_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(host.TEST_DOUBLE_ENV, str(DOUBLE))  # /dev/davinci0..7 of the double
    env = {"TASK_DEVICE": "5", "TILE_FWK_DEVICE_ID": "2"}
    assert host.choose_device(1, env) == host.DeviceChoice(1, "--device")
    assert host.choose_device(None, env) == host.DeviceChoice(5, "TASK_DEVICE")
    assert host.choose_device(None, {"TILE_FWK_DEVICE_ID": "2"}) == host.DeviceChoice(2, "TILE_FWK_DEVICE_ID")
    assert host.choose_device(None, {}) == host.DeviceChoice(0, "default")
    with pytest.raises(SubmissionError, match=r"NPU device 9 \(from TASK_DEVICE\) does not exist; this host has "
                                              r"device\(s\) 0, 1, 2, 3, 4, 5, 6, 7"):
        host.choose_device(None, {"TASK_DEVICE": "9"})
    with pytest.raises(SubmissionError, match="TILE_FWK_DEVICE_ID='npu:1' is not a device id"):
        host.choose_device(None, {"TILE_FWK_DEVICE_ID": "npu:1"})


@pytest.mark.parametrize(("text", "ids"), [("0-7", list(range(8))), ("0,2, 4", [0, 2, 4]), ("0-1,6", [0, 1, 6]),
                                           ("3", [3]), ("", [])])
def test_device_lists(text: str, ids: list[int]) -> None:
    assert host.parse_device_list(text) == ids


@pytest.mark.parametrize("text", ["a", "0-", "3-1", "0,x", "-1"])
def test_bad_device_lists_are_named(text: str) -> None:
    with pytest.raises(ValueError, match="bad device list"):
        host.parse_device_list(text)


def test_npu_run_on_the_double_sets_the_card_and_labels_everything(tmp_path: Path) -> None:
    """The NPU harness runs to the kernel launch on card 2; the double cannot launch, and says so."""
    out = tmp_path / "report.json"
    done = crosscheck_run(str(EXAMPLES / "relu"), "--mode", "npu", "--device", "2", "--case", "relu_32x64",
                          "--json", str(out), env=double_env())
    assert done.returncode == 1, done.stderr
    report = json.loads(out.read_text())
    npu = report["environment"]["npu"]
    assert npu["test_double"] is True and npu["torch_npu"] == "test double"
    assert (npu["device_id"], npu["device_source"], npu["soc"], npu["cann"], npu["driver"]) == \
        (2, "--device", "910B3", "8.5.0", "24.1.rc2")
    case = report["cases"][0]
    assert [s["name"] for s in case["stages"]][2:] == ["device", "golden", "npu"]
    assert case["verdict"] == "structural_error" and case["precision"] == "not_applicable"
    assert "test double: there is no NPU to launch a kernel on" in case["error"]["message"]
    assert [launch["kernel"] for launch in case["launches"]] == ["relu_kernel"]  # the launch watch (shared with SIM) saw it


def test_a_card_failing_507018_stops_at_the_device_stage(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = crosscheck_run(str(EXAMPLES / "relu"), "--mode", "npu", "--case", "relu_32x64", "--json", str(out),
                          env=double_env(NPU_DOUBLE_FAULTS="3:507018", TILE_FWK_DEVICE_ID="3"))
    assert done.returncode == 3, done.stderr  # the card failed, not the kernel: infrastructure
    report = json.loads(out.read_text())
    assert report["environment"]["npu"]["device_source"] == "TILE_FWK_DEVICE_ID"
    case = report["cases"][0]
    assert (case["verdict"], case["stage"], case["kernel_launches"]) == ("not_run", "device", 0)
    assert case["verdict_reason"].startswith("the NPU device could not be set up")
    assert [d["rule"] for d in case["diagnosis"]][:2] == ["npu-driver-cann-too-old", "npu-device-error"]


def test_scripts_get_their_card_in_tile_fwk_device_id(tmp_path: Path) -> None:
    script = tmp_path / "which_card.py"
    script.write_text("import os, torch\nprint('card', os.environ['TILE_FWK_DEVICE_ID'], torch.npu.current_device())\n")
    out = tmp_path / "report.json"
    done = crosscheck_run(str(script), "--mode", "npu", "--json", str(out), env=double_env(TASK_DEVICE="6"))
    assert done.returncode == 2, done.stderr  # no kernel ran: nothing judged, never a pass (docs/realops.md §9)
    case = json.loads(out.read_text())["cases"][0]
    assert "card 6 6" in case["logs"]["stdout"]
    assert case["verdict"] == "not_run"
