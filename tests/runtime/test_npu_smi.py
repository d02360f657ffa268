"""`npu-smi info` parsing, on SAMPLE tables written in its layout (tests/fixtures/npu_smi/README.md).

The samples are not recordings from hardware; these tests check the parser, never a card.
"""
from __future__ import annotations

from pathlib import Path

from runtime.devices import npu_smi

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "npu_smi"


def parse(name: str) -> npu_smi.SmiInfo:
    return npu_smi.parse((SAMPLES / name).read_text())


def test_an_eight_card_910b_host() -> None:
    info = parse("910b_8cards.txt")
    assert info.driver == "24.1.rc2"
    assert [c.device for c in info.cards] == list(range(8))
    assert {c.name for c in info.cards} == {"910B3"}
    assert [c.device for c in info.cards if not c.healthy] == [3] and info.card(3).health == "Warning"
    busy = info.card(2)
    assert busy.power_w == 171.6 and busy.temp_c == 44 and busy.aicore_pct == 37
    assert busy.hbm_mb == (21870, 65536) and busy.memory_mb == (0, 0) and busy.bus_id == "0000:81:00.0"
    assert busy.processes == [{"npu": 2, "chip": 0, "pid": 31337, "name": "python3.11", "memory_mb": 18533}]
    assert info.card(0).processes == []


def test_310p_cards_take_the_device_column_as_their_id() -> None:
    info = parse("310p_2chips.txt")
    assert info.driver == "25.3.rc1"
    assert [(c.npu, c.chip, c.device, c.name) for c in info.cards] == [(8, 0, 0, "310P3"), (9, 0, 1, "310P3")]
    assert info.card(0).power_w is None and info.card(0).memory_mb == (1830, 21527) and info.card(0).hbm_mb is None
    assert info.card(1).processes[0]["pid"] == 4711
    assert info.card(8) is None  # 8 is an NPU id, not a device id


def test_not_available_figures_and_an_alarm() -> None:
    info = parse("910b_na_power.txt")
    sick = info.card(0)
    assert sick.health == "Alarm" and not sick.healthy
    assert sick.power_w is None and sick.temp_c is None and sick.aicore_pct is None
    assert info.card(1).healthy and info.card(1).hbm_mb == (2858, 32768)


def test_text_that_is_not_a_table_gives_no_cards() -> None:
    assert npu_smi.parse("").cards == []
    info = npu_smi.parse("dcmi model initialized failed, because the device is used. ret is -8020\n")
    assert info.cards == [] and info.driver is None


def test_a_missing_tool_is_reported_not_raised() -> None:
    text, problem = npu_smi.run("npu-smi-that-does-not-exist")
    assert text is None and problem == "npu-smi-that-does-not-exist not found on PATH"


def test_a_failing_tool_is_reported_with_its_exit_code(tmp_path: Path) -> None:
    tool = tmp_path / "npu-smi"
    tool.write_text("#!/bin/sh\necho 'dcmi module initialize failed. ret is -8005' >&2\nexit 3\n")
    tool.chmod(0o755)
    text, problem = npu_smi.run(str(tool))
    assert text is None and problem == f"{tool} info exited with code 3: dcmi module initialize failed. ret is -8005"
