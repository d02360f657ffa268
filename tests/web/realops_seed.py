"""Real-operator-shaped results (issue 35): what a `ci run` of a pypto-gym checkout of public model operators
stores, for the pages to be checked and photographed on.

Each operator is a test module of the gym's layout (tests/ops/<model>/<kernel>/test_<kernel>.py), its cases
pytest node ids, its errors and diagnoses at file:line deep in a CI runner's checkout. Between them the four
outcomes, each for its real reason:
- failed: gated_delta_rule's 4096-row case stops at a vec tile shape (structural_error, the gym's own path);
  its 128-row case passes graph verify;
- broken: gqa_decode_attn's graph verify hit the job's memory limit at model shape (resource_limit);
- skipped: mla_prolog's test needs a fixture crosscheck cannot supply (not_run, stage arguments);
  moe_gating's golden calls a torch_npu op only an NPU computes (not_run, stage npu_only);
  attn_softmax's compare is over one key, its golden 1.0 everywhere (inconclusive);
- acceptable: swiglu, SIM garbage with graph verify matching the golden, in three cases of one diagnosis.
The reports are a real `crosscheck run` report of this host (tests/web/data/scale_add.sim.json) reshaped.
"""
from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.orm import Session

from runtime import verdicts
from server.blobs import BlobStore
from server.config import Settings
from tests.web import seed as main_seed

CHECKOUT = "/builds/kernels-team/pypto-gym/"
GDR = "tests/ops/qwen3_next/gated_delta_rule/test_gated_delta_rule.py"
GDR_IMPL = "tests/ops/qwen3_next/gated_delta_rule/gated_delta_rule_impl.py"
MLA = "tests/ops/deepseek_v2_lite_chat/mla_prolog/test_mla_prolog.py"
MOE = "tests/ops/qwen3_moe/moe_gating/test_moe_gating.py"
SOFTMAX = "tests/ops/gemma4_31b_it/test_attn_softmax.py"
GQA = "tests/ops/qwen3_next/gqa_decode_attn/test_gqa_decode_attn.py"
SWIGLU = "tests/ops/qwen3_5_9b/swiglu/test_swiglu.py"
VEC_TILE_FIX = ("Call `pypto.set_vec_tile_shapes(...)` with one positive int per tensor dimension at the top of the "
                "kernel (and again after any change of rank), e.g. `pypto.set_vec_tile_shapes(16, 64)` for a 2-D tensor.")
# The operators this seed adds, by outcome (the browser test checks each reads so on every page).
OUTCOMES = {"gated_delta_rule": "failed", "gqa_decode_attn": "broken", "mla_prolog": "skipped",
            "moe_gating": "skipped", "attn_softmax": "skipped", "swiglu": "acceptable"}
# Their verdicts across modes (server/services/combined.py): a test that never ran is not judged, never a
# structural error beside "cannot judge here".
VERDICTS = {"gated_delta_rule": "structural_error", "gqa_decode_attn": "resource_limit", "mla_prolog": "not_judged",
            "moe_gating": "not_judged", "attn_softmax": "awaiting_npu", "swiglu": "sim_garbage_graph_ok"}


def _report(operator: str, test: str, ids: list[str]) -> dict[str, Any]:
    """scale_add's real report with one case per pytest id, named as a module's items are (docs/realops.md §4)."""
    report = main_seed.sim_report("scale_add", operator)
    proto = report["cases"][0]
    report["cases"] = []
    for i in ids:
        case = copy.deepcopy(proto)
        name = test.rsplit("/", 1)[1].removesuffix(".py")
        case.update(case=f"{name}[{i}]", description=f"{test}::{name}[{i}]")
        report["cases"].append(case)
    return report


def _stopped_at(case: dict[str, Any], stage: str) -> None:
    """The stages a job records when it stops at `stage`: the ones before it ran, that one failed."""
    before = [s for s in case["stages"] if s["name"] in ("syntax", "lint", "golden")]
    before = before[:[s["name"] for s in before].index(stage)] if stage in [s["name"] for s in before] else before
    case["stages"] = [*before, {"name": stage, "status": "error", "duration_s": 0.01, "detail": ""}]


def _error(case: dict[str, Any], kind: str, message: str, path: str, line: int) -> None:
    case["error"] = {"type": kind, "message": message, "file": CHECKOUT + path, "line": line, "traceback": ""}


def gated_delta_rule() -> dict[str, Any]:
    report = _report("gated_delta_rule", GDR, ["bf16-4096", "bf16-128"])
    bad = report["cases"][0]
    bad.update(verdict=verdicts.STRUCTURAL_ERROR, structural="error", stage="sim", graph_verify=None,
               output_written=False, kernel_launches=0, launches=[], cost_model=None, metrics=None,
               precision="not_applicable",
               verdict_reason="pypto stopped tracing the kernel: op [MULS] tile shape not set")
    _stopped_at(bad, "sim")
    _error(bad, "RuntimeError", "Errcode: F21004! op [MULS]tile shape not set, func Operation, file operation.cpp, "
           "line 184", GDR_IMPL, 212)
    bad["diagnosis"] = [{"rule": "vec-tile-shape-not-set", "fix": VEC_TILE_FIX, "sim_only": False, "stage": "sim",
                         "cause": "An elementwise op was traced with no positive vector tile shape in force.",
                         "evidence": "op [MULS]tile shape not set", "origin": "exception",
                         "file": CHECKOUT + GDR_IMPL, "line": 212}]
    return report


def gqa_decode_attn() -> dict[str, Any]:
    report = _report("gqa_decode_attn", GQA, ["bf16-1-32768-8-128"])
    case = report["cases"][0]
    case.update(verdict=verdicts.RESOURCE_LIMIT, stage="graph_verify", graph_verify=None,
                verdict_reason="graph verify needed more than the job's memory limit (8 GiB): raise --memory")
    return report


def mla_prolog() -> dict[str, Any]:
    report = _report("mla_prolog", MLA, ["bf16-16-7168"])
    case = report["cases"][0]
    message = "fixture 'mla_weights_cache' not found (defined nowhere in the checkout's conftests)"
    case.update(verdict=verdicts.NOT_RUN, stage=verdicts.ARGUMENTS_STAGE, graph_verify=None, output_written=False,
                kernel_launches=0, launches=[], cost_model=None, metrics=None, precision="not_applicable",
                verdict_reason=f"{message}: its kernel never ran")
    _stopped_at(case, "sim")
    _error(case, "CannotCall", message, MLA, 41)
    return report


def moe_gating() -> dict[str, Any]:
    report = _report("moe_gating", MOE, ["fp16-64-128-8", "fp16-1024-128-8"])
    for case in report["cases"]:
        case.update(verdict=verdicts.NOT_RUN, stage=verdicts.NPU_ONLY_STAGE, graph_verify=None, output_written=False,
                    kernel_launches=0, launches=[], cost_model=None, metrics=None, precision="not_applicable",
                    verdict_reason="the golden or the test calls a torch_npu op only an NPU can compute: not judged "
                                   "on this host; judge it on an NPU")
        _stopped_at(case, "golden")
        _error(case, "GoldenError", "golden raised NotImplementedError: torch_npu.npu_moe_gating_top_k has no CPU "
               "reference", MOE, 58)
    return report


def attn_softmax() -> dict[str, Any]:
    report = _report("attn_softmax", SOFTMAX, ["1-key"])
    case = report["cases"][0]
    case["graph_verify"]["metrics"].update(golden_abs_max=1.0, golden_min=1.0, golden_max=1.0)
    case.update(verdict=verdicts.INCONCLUSIVE, stage="compare",
                verdict_reason="the golden is 1 in all 2048 elements: any output filled or normalised to that "
                               "constant matches it")
    return report


def swiglu() -> dict[str, Any]:
    return _report("swiglu", SWIGLU, ["bf16-1-4096-12288", "bf16-16-4096-12288", "bf16-128-4096-12288"])


REPORTS = (gated_delta_rule, gqa_decode_attn, mla_prolog, moe_gating, attn_softmax, swiglu)


def add(session: Session, blobs: BlobStore, settings: Settings) -> dict[str, Any]:
    """The operators above, each one SIM job through the real services; their ids by operator."""
    labels = {"branch": "main", "commit": "9c41e07", "pipeline": "https://ci.example/kernels-team/pypto-gym/-/pipelines/88213"}
    jobs = {}
    for make in REPORTS:
        report = make()
        operator = report["cases"][0]["operator"]
        [job] = main_seed.submit_and_store(session, blobs, settings, "scale_add", {"sim": report}, operator=operator,
                                           labels=labels)
        jobs[operator] = job.id
    return jobs
