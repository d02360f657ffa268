"""The two ways a case runs: `sim` (the CPU simulator, for structure) and `npu` (a card, for precision)."""
from __future__ import annotations

from typing import Literal

SIM = "sim"
NPU = "npu"
MODES = (SIM, NPU)
Mode = Literal["sim", "npu"]  # for pydantic and FastAPI; tests/runtime/test_verdicts.py keeps it equal to MODES
