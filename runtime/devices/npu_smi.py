"""Read `npu-smi info`: the driver version and, per card, its name (the SoC), health and memory.

The table has one block per card, two rows each (docs/npu.md §2):
    | 0     910B3               | OK            | 93.5        36                0    / 0             |
    | 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
The first row carries NPU id, name, health, power and temperature; the second the chip (and, on
310-series cards, the logical device id), bus id, AI Core use and memory. A process table follows.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

SMI_TIMEOUT_S = 20.0
HEADER = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)", re.IGNORECASE)
ROW = re.compile(r"^\|(.*)\|\s*$")
USAGE = re.compile(r"(\d+)\s*/\s*(\d+)")
PROCESS = re.compile(r"^\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s*\|\s*(.*?)\s*\|\s*(\d+)\s*\|")
HEALTHY = ("OK",)


@dataclass
class Card:
    npu: int  # the id npu-smi shows (the card)
    chip: int
    device: int  # the logical id torch_npu and TILE_FWK_DEVICE_ID use
    name: str  # the SoC, e.g. 910B3 or 310P3
    health: str  # OK | Warning | Alarm | Critical | ...
    bus_id: str = ""
    power_w: float | None = None
    temp_c: float | None = None
    aicore_pct: float | None = None
    memory_mb: tuple[int, int] | None = None  # used, total
    hbm_mb: tuple[int, int] | None = None
    processes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return self.health in HEALTHY

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["healthy"] = self.healthy
        return data


@dataclass
class SmiInfo:
    driver: str | None  # the "Version:" of the header: the driver's
    cards: list[Card]

    def card(self, device: int) -> Card | None:
        return next((c for c in self.cards if c.device == device), None)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "NA" on cards that do not report it


def _cells(line: str) -> list[str] | None:
    m = ROW.match(line.strip())
    if m is None or set(m.group(1).strip()) <= set("=-+ "):
        return None
    return [c.strip() for c in m.group(1).split("|")]


def parse(text: str) -> SmiInfo:
    """Parse `npu-smi info`; unknown lines are skipped, so a newer layout degrades to fewer fields."""
    header = HEADER.search(text)
    cards: list[Card] = []
    pending: list[str] | None = None  # the first row of a card, waiting for its second
    processes: list[dict[str, Any]] = []
    for line in text.splitlines():
        cells = _cells(line)
        if cells is None or len(cells) < 3:
            continue
        if (m := PROCESS.match(line.strip())) is not None:
            processes.append({"npu": int(m.group(1)), "chip": int(m.group(2)), "pid": int(m.group(3)),
                              "name": m.group(4), "memory_mb": int(m.group(5))})
            continue
        first = cells[0].split()
        if pending is None:
            if len(first) >= 2 and first[0].isdigit() and not first[1].isdigit():
                pending = cells
            continue
        if first and first[0].isdigit() and (len(first) == 1 or first[1].isdigit()):
            cards.append(_card(pending, cells))
        pending = None
    for proc in processes:
        for card in cards:
            if card.npu == proc["npu"] and card.chip == proc["chip"]:
                card.processes.append(proc)
    return SmiInfo(driver=header.group(2) if header else None, cards=cards)


def _card(top: list[str], bottom: list[str]) -> Card:
    npu_id, name = top[0].split(None, 1)
    ids = [int(x) for x in bottom[0].split()]
    chip = ids[0]
    device = ids[1] if len(ids) > 1 else int(npu_id)  # 910-series: one chip, device id = NPU id
    figures = top[2].split() if len(top) > 2 else []
    usages = [(int(a), int(b)) for a, b in USAGE.findall(bottom[2] if len(bottom) > 2 else "")]
    aicore = bottom[2].split()[0] if len(bottom) > 2 and bottom[2].split() else ""
    return Card(
        npu=int(npu_id), chip=chip, device=device, name=name.strip(), health=top[1] if len(top) > 1 else "",
        bus_id=bottom[1] if len(bottom) > 1 else "",
        power_w=_number(figures[0]) if figures else None,
        temp_c=_number(figures[1]) if len(figures) > 1 else None,
        aicore_pct=_number(aicore),
        memory_mb=usages[0] if usages else None,
        hbm_mb=usages[1] if len(usages) > 1 else None,
    )


def run(executable: str = "npu-smi") -> tuple[str | None, str]:
    """(`npu-smi info` output, problem). Output None when the tool is missing or failed."""
    path = shutil.which(executable)
    if path is None:
        return None, f"{executable} not found on PATH"
    try:
        done = subprocess.run([path, "info"], capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"{executable} info did not answer within {SMI_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return None, f"{executable} info could not run: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        return None, f"{executable} info exited with code {done.returncode}: {tail[0][:200]}"
    return done.stdout, ""
