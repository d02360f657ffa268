"""Human-readable output of a report (rich), laid out for the terminal's width.

CI logs are often 80 columns wide: when the case table does not fit, each case becomes a short block
of lines instead of a table row, so verdict names and numbers never break mid-word.
"""
from __future__ import annotations

import dataclasses
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from runtime import numbers, verdicts, vocabulary
from runtime.evidence import calculator_limits, graph_verify, mismatch_map
from runtime.judge import simgap
from runtime.judge.labels import row_slices_text
from runtime.report import CaseResult, Diagnosis, Report

NOISE_PREFIX = vocabulary.NOISE_PREFIX


def fmt(value: float | None) -> str:
    """A number as every surface writes it (runtime.numbers), '-' when absent."""
    return "-" if value is None else numbers.sig(value)


def _diff_text(case: CaseResult, mode: str) -> str:
    m = case.metrics
    if not m:
        return "-"
    diff, nan = m.get("max_abs_diff"), m.get("nan_count")
    if mode == "sim" and numbers.is_sim_garbage(diff, nan, case.output_written, case.verdict):
        return numbers.sim_diff_text(diff, nan, garbage=True)  # as the pages show it: never a plain number
    text = fmt(diff)
    counts = numbers.nan_inf(nan or 0, m.get("inf_count") or 0)
    return text + (f" ({counts})" if counts != "none" else "")


def _graph_text(case: CaseResult) -> str:
    gv = case.graph_verify or {}
    status = gv.get("status")
    if not status:
        return "-"
    gm = gv.get("metrics") or {}
    if (gv.get("emulated_npu_branch") or {}).get("status") == "inconclusive":  # docs/realops.md §9
        return f"{status}, emulated NPU inconclusive"
    rule = gv.get("rule") or (gv.get("emulated_npu_branch") or {}).get("rule")
    if rule in calculator_limits.RULES:  # a graph the calculator gets wrong (docs/realops.md §9)
        return f"{status}, {rule}"
    compares = [a["compare"] for a in gv.get("asserts") or [] if isinstance(a, dict) and a.get("compare")]
    if not gm and compares:  # bare asserts on a float read from a kernel output (docs/realops.md §9)
        return f"{status}, assert {compares[0]}" + (f" (+{len(compares) - 1})" if len(compares) > 1 else "")
    return f"{status} {fmt(gm.get('max_abs_diff'))}" if gm else str(status)


def _written_text(case: CaseResult) -> str:
    return "-" if case.output_written is None else ("yes" if case.output_written else "no")


def _aicore_text(case: CaseResult) -> str:
    """Microseconds as a person reads them: 1,235, not 1.23e+03."""
    if not case.cost_model:
        return "-"
    us = case.cost_model.aicore_time_us
    return f"{us:,.0f}" if 100 <= abs(us) < 1e9 else fmt(us)


def _verdict(case: CaseResult, mode: str) -> Text:
    """The verdict id, coloured by its outcome (runtime.vocabulary: the pages use the same colours)."""
    kind = vocabulary.outcome(case.verdict, mode, case.stage)
    return Text(case.verdict, style=vocabulary.RICH.get(kind or "", ""), no_wrap=True)


def _outcome(case: CaseResult, mode: str) -> Text:
    """The case's outcome in the words and colour every surface uses (runtime.vocabulary)."""
    kind = vocabulary.outcome(case.verdict, mode, case.stage)
    return Text(vocabulary.word(kind), style=vocabulary.RICH.get(kind or "", ""), no_wrap=True)


_COLUMNS = ("case", "verdict", "outcome", "structure", "stage", "launches", "written", "max |diff|", "graph", numbers.AICORE_US,
            "time s")


def _rows(report: Report) -> list[list[str]]:
    return [[case.case, case.verdict, vocabulary.word(vocabulary.outcome(case.verdict, report.mode, case.stage)),
             _structure_text(case), case.stage, str(case.kernel_launches), _written_text(case),
             _diff_text(case, report.mode), _graph_text(case), _aicore_text(case), f"{case.duration_s:.2f}"]
            for case in report.cases]


# How the runner found the cases (report.Submission.cases_from), in words for the header.
CASES_FROM_TEXT = {"test_cases.json": "cases from test_cases.json", "pytest items": "cases: the items pytest collects",
                   "--case": "cases given with --case", "--list": "cases from its --list",
                   "test_cases.json beside": "cases from the test_cases.json beside it",
                   "the script whole": "run whole: it lists no cases"}


def _structure_text(case: CaseResult) -> str:
    """The job's structural status, unless the verdict says it shows nothing about the kernel: a fake
    pass never ran it, and a SIM that cannot simulate it stopped for its own reasons."""
    if case.structural == "ok" and case.verdict == verdicts.SUSPECT_FAKE_PASS:
        return "unproven"
    if case.verdict == verdicts.SIM_UNSUPPORTED:
        return "unknown"
    return case.structural


def _table_width(rows: list[list[str]]) -> int:
    """Columns at their natural width, plus rich's padding and borders."""
    widths = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(_COLUMNS)]
    return sum(widths) + 3 * len(widths) + 1


def _wide_table(report: Report, rows: list[list[str]]) -> Table:
    table = Table(show_lines=False)
    for col in _COLUMNS:
        table.add_column(col, no_wrap=True)
    for case, row in zip(report.cases, rows):
        table.add_row(escape(row[0]), _verdict(case, report.mode), _outcome(case, report.mode),
                      *(escape(cell) for cell in row[3:]))
    return table


def _print_stacked(report: Report, console: Console) -> None:
    """One block per case: the verdict on the first line, then the deciding evidence first."""
    for case in report.cases:
        head = Text.assemble((case.case, "bold"), "  ", _verdict(case, report.mode), " · ", _outcome(case, report.mode),
                             f"  {case.duration_s:.2f} s")
        if head.cell_len > console.width:  # a long pytest id: the verdict and outcome on a line of their own
            head = Text.assemble((case.case, "bold"), "\n  ", _verdict(case, report.mode), " · ",
                                 _outcome(case, report.mode), f"  {case.duration_s:.2f} s")
        console.print(head, overflow="fold")
        graph = _graph_text(case)
        evidence = [f"graph {graph}"] if graph != "-" else []
        evidence += [f"max |diff| {_diff_text(case, report.mode)}", f"{numbers.AICORE_US} {_aicore_text(case)}"]
        _print_items(console, evidence, 2)
        _print_items(console, [f"structure {_structure_text(case)}", f"stage {case.stage or '-'}",
                               f"{case.kernel_launches} launch(es)", f"output written {_written_text(case)}"], 2)
        if len(case.outputs) > 1:
            _print_indented(console, "outputs: " + " · ".join(_output_text(o) for o in case.outputs), 2)


def _output_text(output: dict[str, Any]) -> str:
    """One output of several, by name: the graph's max |diff| when graph verify ran, else the raw one."""
    m = output.get("graph_metrics") or output.get("metrics") or {}
    label = "graph " if output.get("graph_metrics") else ""
    return f"{output.get('name', '?')} {label}max |diff| {fmt(m.get('max_abs_diff'))}"


@dataclass
class _Grouped:
    diagnosis: Diagnosis
    cases: list[str] = field(default_factory=list)


def _group_diagnoses(report: Report) -> tuple[list[_Grouped], int]:
    """Each diagnosis once, with the cases it applies to; and how many benign log lines were hidden."""
    grouped: dict[str, _Grouped] = {}
    noise = 0
    for case in report.cases:
        for d in case.diagnosis[:3]:
            if d.rule.startswith(NOISE_PREFIX):
                noise += 1
                continue
            entry = grouped.setdefault(d.rule, _Grouped(d))
            if case.case not in entry.cases:
                entry.cases.append(case.case)
    return list(grouped.values()), noise


def _cases_text(cases: list[str], total: int) -> str:
    if len(cases) == total and total > 1:
        return "all cases"
    shown = ", ".join(cases[:4]) + (f" and {len(cases) - 4} more" if len(cases) > 4 else "")
    return shown


def print_report(report: Report, console: Console | None = None) -> None:
    console = console or Console()
    sub = report.submission
    found = CASES_FROM_TEXT.get(sub.cases_from, "")
    _print_indented(console, f"{sub.name} ({sub.kind}{', ' + found if found else ''}, sha256 {sub.sha256[:12]}) "
                             f"mode={report.mode} "
                             f"pypto {report.environment.pypto}, torch {report.environment.torch}"
                             + (", torch_npu: CPU stand-in" if report.environment.torch_npu else ""), 0)
    rows = _rows(report)
    if _table_width(rows) <= console.width:
        console.print(_wide_table(report, rows))
    else:
        _print_stacked(report, console)
    for case in report.cases:
        if case.error:
            where = f" ({case.error.file}:{case.error.line})" if case.error.file else ""
            first = simgap.headline(case.error.message)[:200]
            console.print(f"[red]{escape(case.case)}[/]: {escape(case.error.type)}: {escape(first)}{escape(where)}")
    for case in report.cases:  # why the harness does not believe a result (docs/SECURITY.md), or skew
        own_check = bool((case.graph_verify or {}).get("own_check"))
        said = case.verdict in (verdicts.SUSPECT_FAKE_PASS, verdicts.VERSION_SKEW, verdicts.INCONCLUSIVE)
        if (said or case.sim_gap or own_check) and case.verdict_reason:
            _print_indented(console, f"{case.case}: {case.verdict_reason}", 0)
    for case in report.cases:  # graph evidence set aside for a known calculator limit (docs/realops.md §9)
        gv = case.graph_verify or {}
        limit = gv if gv.get("rule") in calculator_limits.RULES else gv.get("emulated_npu_branch") or {}
        if limit.get("rule") in calculator_limits.RULES:
            _print_indented(console, f"{case.case}: graph evidence set aside: {limit.get('reason')}", 0)
    unavailable: dict[str, list[str]] = {}  # why a SIM case has no graph evidence, once per reason
    for case in report.cases:
        gv = case.graph_verify or {}
        if report.mode == "sim" and gv.get("status") == "unavailable" and gv.get("reason") \
                and gv["reason"] != graph_verify.DISABLED:  # asked for with --no-graph-verify: nothing to say
            unavailable.setdefault(str(gv["reason"]), []).append(case.case)
    for reason, cases in unavailable.items():
        _print_indented(console, f"graph verify unavailable ({_cases_text(cases, len(report.cases))}): {reason}", 0)
    references: dict[str, list[str]] = {}  # a golden computed by the stand-in's CPU references (docs/realops.md §12)
    for case in report.cases:
        if case.cpu_references:
            references.setdefault(", ".join(case.cpu_references), []).append(case.case)
    for ops, cases in references.items():
        _print_indented(console, f"golden via CPU reference of {ops} ({_cases_text(cases, len(report.cases))})", 0)
    for case in report.cases:  # graph verify's memory at model shapes (docs/pypto.md §10)
        for cut in (case.graph_verify or {}).get("row_slices") or []:
            _print_indented(console, f"{case.case}: graph verify on row slices: {row_slices_text(cut)}", 0)
    _print_mismatches(report, console)
    grouped, noise = _group_diagnoses(report)
    if grouped:
        console.print("[bold]diagnosis[/]")
    for entry in grouped:
        d = entry.diagnosis
        head = f"{d.rule}{' (SIM only)' if d.sim_only else ''} ({_cases_text(entry.cases, len(report.cases))})"
        _print_indented(console, f"{head}: {d.cause}", 2)
        _print_indented(console, f"fix: {d.fix}", 4)
        if d.pypto_note:
            _print_indented(console, f"note: {d.pypto_note}", 4)
    if noise:
        console.print(f"[dim]{noise} benign pypto log line(s) hidden[/]")
    named = [f for f in KEPT_FILES if any(f in e.diagnosis.fix for e in grouped)]
    if named:
        _print_kept(report, named, console)
    if report.lint:
        console.print("[bold]lint[/]")
        for f in report.lint:
            _print_indented(console, f"{f.severity:7} {f.file}:{f.line} [{f.rule}] {f.message}", 2)
    _print_indented(console, summary_line(report), 0)


def _print_mismatches(report: Report, console: Console) -> None:
    """Where each failed compare's mismatches are and its first ones, as indices of the output (runtime.evidence.mismatch_map)."""
    found = [(case, maps) for case in report.cases
             if (maps := mismatch_map.deciding(dataclasses.asdict(case), report.mode))]
    if found:
        console.print("[bold]mismatches[/]")
    for case, (source, maps) in found:
        for name, summary in maps:
            output = f" output {name}" if name else ""
            _print_indented(console, f"{case.case}{output} ({source}): {mismatch_map.where_text(summary)}; "
                                     f"first at {mismatch_map.first_text(summary)}", 2)


# Files a diagnosis's Fix names that the report does not print; they stay in each case's dirs when kept.
KEPT_FILES = ("verify_result_brief.csv",)
KEPT_GLOBS = {"verify_result_brief.csv": ("launch*/verify/verify_result_brief.csv",)}
MAX_KEPT_SHOWN = 4


def _print_kept(report: Report, names: list[str], console: Console) -> None:
    """Where the files a Fix names are: their paths when the run kept its dirs, else how to keep them."""
    paths: list[str] = []
    for case in report.cases:
        folder = Path(case.evidence_dir) if case.evidence_dir else None
        for name in names:
            for pattern in KEPT_GLOBS[name] if folder is not None and folder.is_dir() else ():
                paths += sorted(str(p) for p in folder.glob(pattern))
    if paths:
        more = f" (and {len(paths) - MAX_KEPT_SHOWN} more)" if len(paths) > MAX_KEPT_SHOWN else ""
        _print_indented(console, "kept: " + ", ".join(paths[:MAX_KEPT_SHOWN]) + more, 0)
    else:
        _print_indented(console, f"{', '.join(names)}: in each case's job dir, removed when the run ends; "
                                 "keep it with `crosscheck run --keep` (or `--work-dir DIR`)", 0)


def _print_indented(console: Console, text: str, indent: int) -> None:
    """Wrap at the console's width with a hanging indent, no trailing spaces; only a word longer than
    a whole line (a long path) is split."""
    pad = " " * indent
    wrapped = textwrap.fill(text, width=max(console.width, indent + 20), initial_indent=pad,
                            subsequent_indent=pad, break_long_words=True, break_on_hyphens=False)
    console.print(escape(wrapped), highlight=False, soft_wrap=True)


def _print_items(console: Console, items: list[str], indent: int) -> None:
    """Items joined by " · ", wrapped between items, never inside one: a name stays beside its value
    ("AICore µs 1.96") at 80 columns. An item longer than a line on its own wraps as text does."""
    width, pad, sep = max(console.width, indent + 20), " " * indent, " · "
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + len(sep) + len(item) <= width:
            lines[-1] += sep + item
        elif lines:
            lines[-1] += " ·"
            lines.append(pad + item)
        else:
            lines.append(pad + item)
    for line in lines:
        if len(line) > width:
            _print_indented(console, line.strip(), indent)
        else:
            console.print(escape(line), highlight=False, soft_wrap=True)


def summary_line(report: Report) -> str:
    """What happened, in words: the cases by outcome, worst first, as every surface counts them."""
    text = f"{report.mode.upper()}, {len(report.cases)} case(s): {vocabulary.summary(report.cases, report.mode)}"
    if report.cancelled:
        text += "; stopped before every case ran"
    return text + f" ({report.duration_s:.1f} s)"
