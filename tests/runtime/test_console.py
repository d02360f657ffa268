"""The CLI's report layout: readable at 80 columns, each diagnosis once, benign log lines muted."""
from __future__ import annotations

import re

from rich.console import Console

from runtime.cli.console import print_report, summary_line
from runtime.report import CaseResult, CostModel, Diagnosis, Environment, Report, Submission

VERDICTS = ("sim_garbage_graph_ok", "graph_fail", "suspect_fake_pass")


def _report() -> Report:
    shared = Diagnosis(rule="graph-verify-mismatch", cause="the tensor graph differs from the golden",
                       fix="compare the listed indices", sim_only=False, stage="sim")
    noise = Diagnosis(rule="noise-graph-verify-index", cause="harmless", fix="ignore", sim_only=True)
    cases = [
        CaseResult(operator="softmax", case=f"softmax_case_with_a_long_name_{i}", verdict=v, structural="ok",
                   stage="compare", kernel_launches=1, output_written=False,
                   metrics={"max_abs_diff": 8.1e37, "nan_count": 3},
                   graph_verify={"status": "fail", "metrics": {"max_abs_diff": 3.83}},
                   diagnosis=[shared, noise] if v != "sim_garbage_graph_ok" else [noise])
        for i, v in enumerate(VERDICTS)
    ]
    return Report(submission=Submission(kind="package", name="softmax", sha256="ab" * 32), mode="sim",
                  environment=Environment(pypto="0.2.0", torch="2.13.0", python="3.11", host="h", cann=None),
                  cases=cases, duration_s=4.2)


def _render(width: int) -> list[str]:
    console = Console(width=width, record=True, force_terminal=False)
    print_report(_report(), console)
    return console.export_text().splitlines()


def test_eighty_columns_never_break_a_verdict_or_overflow() -> None:
    lines = _render(80)
    assert max(len(line) for line in lines) <= 80
    for verdict in VERDICTS:
        assert any(verdict in line for line in lines), verdict
    assert not any(line.endswith(" ") for line in lines)


def test_wide_terminal_gets_one_table_row_per_case() -> None:
    lines = _render(200)
    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == len(VERDICTS)
    for verdict, row in zip(VERDICTS, rows):
        assert verdict in row


def test_each_diagnosis_printed_once_with_its_cases_and_noise_muted() -> None:
    text = "\n".join(_render(100))
    assert text.count("graph-verify-mismatch") == 1
    assert "softmax_case_with_a_long_name_1" in text.split("graph-verify-mismatch", 1)[1]
    assert "noise-graph-verify-index" not in text
    assert "3 benign pypto log line(s) hidden" in text


def test_summary_says_what_happened() -> None:
    line = summary_line(_report())
    assert line.startswith("SIM, 3 case(s): kernel defect ×2 (graph fail ×1, suspect fake pass ×1); acceptable ×1")


def test_a_suspect_case_says_why() -> None:
    report = _report()
    report.cases[2].verdict_reason = ("the job's own report contradicts what the harness checked outside it: "
                                      "the job changed the harness's code in its process: runtime.evidence.metrics.compare")
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    text = console.export_text()
    assert "runtime.evidence.metrics.compare" in text and max(len(line) for line in text.splitlines()) <= 80


def test_a_fake_pass_never_reads_as_structure_ok() -> None:
    for width in (80, 200):
        lines = _render(width)
        fake = next(i for i, line in enumerate(lines) if "suspect_fake_pass" in line)
        block = "\n".join(lines[fake:fake + 4]) if width == 80 else lines[fake]
        assert "unproven" in block and "structure ok" not in block, block
        others = "\n".join(lines[:fake])
        assert ("structure ok" if width == 80 else " ok ") in others


def test_a_lint_finding_in_a_deep_checkout_path_stays_in_80_columns() -> None:
    from runtime.report import LintFinding

    report = _report()
    deep = "src/experimental/fused_ops/inplace_add_rms_norm_with_quantisation/op_kernel/kernel_impl.py"
    report.lint = [LintFinding(rule="golden-fallback", severity="error", file=deep, line=123,
                               message="When the kernel call fails, this handler returns a torch result.")]
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    lint = "".join(line.strip() for line in lines[lines.index("lint") + 1:])
    assert f"{deep}:123" in lint and "[golden-fallback]" in lint


def test_a_case_sim_cannot_simulate_reads_structure_unknown() -> None:
    report = _report()
    report.cases[0].verdict, report.cases[0].structural = "sim_unsupported", "error"
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    lines = console.export_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "sim_unsupported" in line)
    block = "\n".join(lines[at:at + 4])
    assert "structure unknown" in block and "structure error" not in block, block


def test_the_header_says_how_the_cases_were_found() -> None:
    report = _report()
    report.submission.kind, report.submission.cases_from = "script", "pytest items"
    console = Console(width=200, record=True, force_terminal=False)
    print_report(report, console)
    assert console.export_text().splitlines()[0].startswith("softmax (script, cases: the items pytest collects, sha256")


def test_an_inconclusive_emulated_npu_branch_is_named_beside_the_graph_status() -> None:
    # docs/realops.md §9: a bf16 compare failing within rounding is neither pass nor fail.
    report = _report()
    report.cases[0].verdict = "sim_output_unwritten"
    report.cases[0].graph_verify = {"status": "no_compare", "emulated_npu_branch": {"status": "inconclusive"}}
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    lines = console.export_text().splitlines()
    assert any("graph no_compare, emulated NPU inconclusive" in line for line in lines)
    assert max(len(line) for line in lines) <= 80


def test_a_bare_assert_on_a_kernel_float_shows_the_compare_it_judged() -> None:
    # docs/realops.md §9: `assert max_diff < tol` has no allclose metrics; its measured value is the evidence.
    report = _report()
    report.cases[0].verdict = "sim_garbage_graph_ok"
    report.cases[0].graph_verify = {"status": "pass", "metrics": None,
                                    "asserts": [{"compare": "0.0625 < 0.1"}, {"compare": "0.0 < 0.1"}]}
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    assert any("graph pass, assert 0.0625 < 0.1 (+1)" in line for line in console.export_text().splitlines())


def test_why_graph_verify_was_unavailable_is_said_once_per_reason() -> None:
    report = _report()
    why = "the graph-verify calculator is still being built (about a minute)"
    for case in report.cases:
        case.graph_verify = {"status": "unavailable", "reason": why, "metrics": None}
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    text = console.export_text()
    assert text.count("graph verify unavailable (all cases): the graph-verify calculator is still") == 1


def test_graph_verify_turned_off_by_the_user_is_not_repeated_under_the_cases() -> None:
    from runtime.evidence import graph_verify

    report = _report()
    for case in report.cases:
        case.graph_verify = {"status": "unavailable", "reason": graph_verify.DISABLED, "metrics": None}
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    assert "graph verify unavailable" not in console.export_text()


def test_an_inconclusive_case_says_why_its_compare_cannot_tell() -> None:
    report = _report()
    case = report.cases[0]
    case.verdict = "inconclusive"
    case.verdict_reason = "the output matches, but the compare cannot tell: the golden is all zero"
    console = Console(width=120, record=True, force_terminal=False)
    print_report(report, console)
    assert f"{case.case}: the output matches, but the compare cannot tell" in console.export_text()


def test_at_eighty_columns_a_name_stays_beside_its_value() -> None:
    """issue 35: "AICore µs" wrapped away from its value at 80 columns; lines break between items only."""
    report = _report()
    for case in report.cases:
        case.metrics = {"max_abs_diff": float("nan"), "nan_count": 16384}
        case.graph_verify = {"status": "fail", "metrics": {"max_abs_diff": 3.8312345, "atol": 1e-3, "rtol": 1e-3}}
        case.cost_model = CostModel(aicore_time_us=1234.5678, utilization=0.5, total_cycles=9384, aic_tasks=0, aiv_tasks=1)
    console = Console(width=80, record=True, force_terminal=False)
    print_report(report, console)
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    shown = [line for line in lines if "AICore" in line]
    assert len(shown) == len(report.cases) and all(re.search(r"AICore µs 1,235", line) for line in shown), shown
    assert all("max |diff|" not in line or re.search(r"max \|diff\| \S", line) for line in lines)
