"""Graph evidence for scripts that compare only on the NPU: their NPU branch, emulated on the CPU.

NPU-first scripts check their output only under `--run_mode npu` (`if run_mode == NPU: assert_allclose(...)`),
so a SIM run gives graph verify nothing to judge (`no_compare`). The emulated run gives the script
`--run_mode npu` while the job stays a SIM job: the torch_npu stand-in maps `npu:N` to the CPU, every
launch is forced to SIM, and graph verify fills each launch's outputs with the tensor graph's CPU result,
so the script's own compare judges what the kernel's graph computes. The result is graph evidence, never
an NPU result (docs/realops.md §9). A failed compare that is only the rounding of a bf16/fp16 output is
inconclusive (runtime/evidence/rounding.py); one on values from a graph the calculator gets wrong (a partial dtype view, a loop-carried reshape) is
unsupported (runtime/evidence/calculator_limits.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.evidence import calculator_limits, graph_verify, rounding
from runtime.intake import testmodule
from runtime.report import CaseResult

SCRIPT_MODE = "npu"  # the run mode the script is told; the job itself stays SIM
DEVICE_ID = "0"  # what scripts read from TILE_FWK_DEVICE_ID before taking their NPU branch
LABEL = ("the script's NPU branch emulated on the CPU: each launch ran in SIM with its outputs from the "
         "graph-verify calculator (graph evidence, not an NPU result)")
JUDGED = ("pass", "fail")


def wanted(case: CaseResult, script: Path, is_module: bool, mode: str, graph_on: bool) -> bool:
    """A script case whose SIM run launched kernels, exited cleanly and compared none of their outputs."""
    gv = case.graph_verify or {}
    if mode != "sim" or not graph_on or gv.get("status") != "no_compare" or case.kernel_launches <= 0:
        return False
    if case.structural != "ok":
        return False
    return is_module or bool(testmodule.run_mode_args(script, SCRIPT_MODE))


def prepare(request: dict[str, Any], script: Path, is_module: bool) -> dict[str, Any]:
    """The SIM case's request, telling the script `--run_mode npu` and giving it a card id to read."""
    if not is_module:
        args = list(request.get("script_args") or [])
        sim_args = testmodule.run_mode_args(script, "sim")
        if sim_args and args[-len(sim_args):] == sim_args:
            args = args[: -len(sim_args)]
        request["script_args"] = [*args, *testmodule.run_mode_args(script, SCRIPT_MODE)]
    request["script_mode"] = SCRIPT_MODE
    request["env"] = {**request["env"], "TILE_FWK_DEVICE_ID": DEVICE_ID}
    return request


def merge(sim: CaseResult, emulated: CaseResult) -> CaseResult:
    """The case as reported: the emulated run when its compare judged a graph result, else the SIM run with why not."""
    gv = dict(emulated.graph_verify or {})
    unwritten = _unwritten_outputs(emulated)
    rounded = rounding.within_rounding((emulated.script or {}).get("asserts") or []) if gv.get("status") == "fail" else None
    if gv.get("status") in JUDGED and emulated.kernel_launches > 0 and not unwritten and not rounded:
        gv["source"] = "emulated_npu_branch"
        gv["sim_run"] = {"verdict": sim.verdict, "graph_verify": (sim.graph_verify or {}).get("status")}
        emulated.graph_verify = gv
        emulated.verdict_reason = f"{LABEL}: {emulated.verdict_reason}"
        return emulated
    kept = dict(sim.graph_verify or {})
    why = _rounding_why(rounded) if rounded else _why_not(emulated, gv, unwritten)
    status = "inconclusive" if rounded else ("unsupported" if gv.get("rule") in calculator_limits.RULES else "unavailable")
    kept["emulated_npu_branch"] = {"status": status, "verdict": emulated.verdict, "reason": why,
                                   **({"rounding": rounded} if rounded else {}),
                                   **({k: gv[k] for k in ("rule", *calculator_limits.KEYS, "set_aside") if k in gv}
                                      if status == "unsupported"
                                      else {})}
    kept["reason"] = f"{kept.get('reason', 'no compare')}; {LABEL} gave none: {why}"
    sim.graph_verify = kept
    return sim


def _unwritten_outputs(emulated: CaseResult) -> list[str]:
    """Kernels whose output an assert of the emulated run read although the calculator never wrote it."""
    asserts = (emulated.script or {}).get("asserts") or []
    return list(dict.fromkeys(str(a["graph"].get("kernel")) for a in asserts
                              if isinstance(a.get("graph"), dict) and a["graph"].get("unwritten_output")))


def _rounding_why(rounded: dict[str, Any]) -> str:
    worst = max(rounded["asserts"], key=lambda a: float(a["max_abs_diff"]) / float(a["ulp"]))
    return (f"its compare failed on the graph's values, but only by {worst['max_abs_diff']:.4g} on a {worst['dtype']} "
            f"output of {worst['kernel']} (at most {rounding.ROUNDING_ULPS} units in the last place at its largest "
            f"value, {worst['golden_abs_max']:.4g}; the script's rtol={worst['rtol']}, atol={worst['atol']}): the "
            "calculator rounds every op to that dtype and pypto's own lowerings of a kernel differ by as much, so "
            "these values cannot decide the compare (inconclusive, docs/realops.md §9)")


def _why_not(emulated: CaseResult, gv: dict[str, Any], unwritten: list[str]) -> str:
    error = emulated.error.message if emulated.error else ""
    texts = [error, *(launch.error for launch in emulated.launches)]
    if graph_verify.PARTIAL_TILE_SIGNATURE.search(" ".join(texts)):
        return graph_verify.failure(None, texts)["reason"]
    if gv.get("rule") in calculator_limits.RULES:
        return str(gv["reason"])
    if unwritten:
        return (f"the graph-verify calculator wrote no output for {', '.join(unwritten)} (it did not compute that "
                "launch), so the script's compare read memory nothing wrote and judged nothing")
    if gv.get("status") == "no_compare":
        return "its NPU branch compared no kernel output either"
    if emulated.kernel_launches == 0:
        return f"its NPU branch launched no kernel ({emulated.verdict_reason})"
    if error:
        return f"its NPU branch failed: {error[:300]}"
    return str(gv.get("reason") or emulated.verdict_reason)
