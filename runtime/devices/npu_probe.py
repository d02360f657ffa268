"""What NPU hardware a worker can use, probed once at start-up (docs/npu.md §1).

torch_npu is imported in a subprocess: importing it in the worker itself would be slow, could hang
on a sick driver, and initialises device state that forked pool processes must not inherit.
Run as `python -m runtime.devices.npu_probe` it prints the torch_npu facts as one JSON line.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from runtime.devices import host, npu_smi

PROBE_TIMEOUT_S = 120.0


@dataclass
class NpuHost:
    usable: list[int]  # cards jobs may use: seen by torch_npu, npu-smi (healthy) and /dev, and allowed
    problem: str = ""  # why none is usable, when so
    torch_npu: str | None = None
    device_count: int = 0
    device_nodes: list[int] = field(default_factory=list)
    cann: str | None = None
    driver: str | None = None
    cards: list[dict[str, Any]] = field(default_factory=list)  # npu-smi's view, one per card
    test_double: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _import_facts() -> dict[str, Any]:
    """In the probe subprocess: import torch_npu (refusing the double or the stand-in) and count cards."""
    from runtime.devices.device import load_torch_npu

    try:
        module = load_torch_npu()
        import torch

        count = int(torch.npu.device_count())  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - reported as the reason, never a crash
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}
    return {"torch_npu": str(getattr(module, "__version__", "unknown")), "device_count": count}


def _torch_npu_facts() -> dict[str, Any]:
    try:
        done = subprocess.run([sys.executable, "-m", "runtime.devices.npu_probe"], capture_output=True, text=True, check=False,
                              timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"importing torch_npu did not finish within {PROBE_TIMEOUT_S:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return {"error": f"the torch_npu probe failed: {tail[:300]}"}
    facts: dict[str, Any] = json.loads(lines[-1])
    return facts


def probe(allowed: list[int] | None = None) -> NpuHost:
    """The usable cards of this host (limited to `allowed`, e.g. NPU_DEVICES), and why when none."""
    nodes = host.npu_devices()
    found = NpuHost(usable=[], device_nodes=nodes, cann=host.cann_version(), test_double=host.test_double_dir() is not None)
    available, why = host.npu_status()
    if not available:
        found.problem = why
        return found
    facts = _torch_npu_facts()
    if "error" in facts:
        found.problem = facts["error"]
        return found
    found.torch_npu, found.device_count = facts["torch_npu"], int(facts["device_count"])
    text, smi_problem = npu_smi.run(host.smi_executable())
    smi = npu_smi.parse(text) if text else None
    found.driver = host.driver_version(smi)
    found.cards = [c.as_dict() for c in smi.cards] if smi else []
    candidates = [d for d in range(found.device_count) if d in nodes]
    if smi is not None:
        healthy = {c.device for c in smi.cards if c.healthy}
        candidates = [d for d in candidates if d in healthy]
    if allowed is not None:
        candidates = [d for d in candidates if d in allowed]
    found.usable = candidates
    if not candidates:
        found.problem = _why_none(found, allowed, smi_problem)
    return found


def _why_none(found: NpuHost, allowed: list[int] | None, smi_problem: str) -> str:
    if found.device_count == 0:
        return "torch_npu sees no device (torch.npu.device_count() is 0)"
    if smi_problem:
        return f"npu-smi: {smi_problem}"
    unhealthy = [f"{c['device']} ({c['health']})" for c in found.cards if not c["healthy"]]
    parts = [f"torch_npu sees {found.device_count} device(s), /dev has {found.device_nodes or 'none'}"]
    if unhealthy:
        parts.append(f"npu-smi reports unhealthy card(s) {', '.join(unhealthy)}")
    if allowed is not None:
        parts.append(f"allowed: {allowed}")
    return "no usable card: " + "; ".join(parts)


if __name__ == "__main__":
    print(json.dumps(_import_facts()))
