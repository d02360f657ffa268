"""SIM gaps: a kernel that pypto compiles but whose SIM run cannot simulate it on this host.

pypto 0.2.0's cost model (the SIM backend) has no pipe for some opcodes the compiler emits, e.g.
`pypto.gathermask` (GATHER_MASK): the launch fails with
"ErrCode: F92001,[SIMULATION]: No pipe type corresponding to opcode is found. opcode=GATHER_MASK".
That is the simulator's limit, not the kernel's defect: nothing is known about the kernel, and only
an NPU can judge it (docs/realops.md §6). So is a kernel the cost model's reader (ParseInput.cpp) rejects
after pypto compiled it, and so is a test that calls a torch_npu op the CPU stand-in
cannot run (`torch_npu.npu_format_cast`, NeedsRealNpu), or a `torch.npu`/`torch_npu` API it does not offer
(`torch.npu.NPUGraph`: an AttributeError saying it needs a real NPU), or a torch call on an `npu` device that
CPU torch does not implement (`torch.rand` of int32).
"""
from __future__ import annotations

import re

_NO_PIPE = re.compile(r"No pipe type corresponding to opcode is found\.\s*opcode=(\w+)")
# The cost model's own reader of the compiled functions rejects one (deepseekv32_lightning_indexer_quant.py of
# r0.2.0's models/: "[SIMULATION]: hasCall=0 func->opSequenceAfterOOO_.size=67 func->tileOps.size=66, func
# BuildFunction, file ParseInput.cpp"): pypto compiled it; the simulator cannot model it.
_COST_MODEL_PARSE = re.compile(r"\[SIMULATION\]:\s*(.*?),\s*func (\w+), file ParseInput\.cpp")
# The torch_npu stand-in's refusal (runtime/devices/standin): the test calls a torch_npu op only an NPU can run.
_NEEDS_NPU = re.compile(r"\b(torch(?:_npu)?\.[\w.]+?)(\(\))?(?: on an npu device)? needs a real NPU")


def detect(texts: str) -> str | None:
    """What this host's SIM cannot simulate, as one phrase, or None."""
    found = list(dict.fromkeys(_NO_PIPE.findall(texts)))
    if found:
        return f"the SIM cost model of this pypto has no pipe for opcode {', '.join(found)}, which the kernel uses"
    parse = _COST_MODEL_PARSE.search(texts)
    if parse:
        return (f"the SIM cost model of this pypto cannot read the compiled kernel ({parse.group(2)}: "
                f"{parse.group(1).strip()[:160]})")
    calls = list(dict.fromkeys(name + "()" for name, _ in _NEEDS_NPU.findall(texts)))
    if calls:
        return f"the test calls {', '.join(calls)}, which only a real NPU can run"
    return None


def headline(message: str) -> str:
    """The line of an error message worth showing first: pypto's generic 'Errcode: FFFFFF!' says nothing,
    the 'ErrCode: Fxxxxx,[COMPONENT]: ...' line after it names the check. A specific code alone on its line
    ('Errcode: FC0000!') is shown with the line after it ('Only allow to expand one axis! …')."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) > 1 and re.fullmatch(r"(?:[\w.]+: )*Errcode: F{6}!?", lines[0], re.IGNORECASE):
        return lines[1]
    if len(lines) > 1 and re.fullmatch(r"(?:[\w.]+: )*Errcode: F[0-9A-F]{5}!?", lines[0], re.IGNORECASE):
        return f"{lines[0]} {lines[1]}"  # the code alone names a component; the next line names the check
    return lines[0] if lines else ""
