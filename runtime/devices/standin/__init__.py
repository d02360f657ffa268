"""The torch_npu stand-in for SIM jobs on hosts without torch_npu (docs/realops.md §2).

Real test files import torch_npu at the top, call `torch.npu.set_device` and create tensors on
`npu:N` even when they accept `--run_mode sim`. SIM runs on the CPU, so in a SIM job that cannot
import torch_npu the child puts `site/` last on sys.path: `import torch_npu` then finds the
stand-in, which maps every NPU device to the CPU. NPU jobs never see it (runtime.devices.device refuses it).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SITE_DIR = Path(__file__).resolve().parent / "site"
MARKER = "__crosscheck_standin__"


def offer() -> bool:
    """Make `import torch_npu` find the stand-in when no torch_npu is importable; True when offered."""
    if importlib.util.find_spec("torch_npu") is not None:
        return False
    sys.path.append(str(SITE_DIR))
    return True


def used() -> bool:
    """Whether the job imported the stand-in (rather than merely having it offered)."""
    module = sys.modules.get("torch_npu")
    return bool(module is not None and getattr(module, MARKER, False))


def references_used() -> list[str]:
    """The torch_npu fused ops the job ran as the stand-in's CPU references (docs/realops.md §12), by name."""
    module = sys.modules.get("torch_npu")
    if module is None or not getattr(module, MARKER, False):
        return []
    return [f"torch_npu.{name}" for name in getattr(module, "REFERENCES_USED", []) if isinstance(name, str)]
