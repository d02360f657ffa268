"""Human-readable output of a report (rich)."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from runtime.report import CaseResult, Report

VERDICT_STYLE = {
    "pass": "bold green", "sim_output_unwritten": "cyan", "precision_fail": "bold red",
    "structural_error": "bold red", "crash": "bold red", "timeout": "bold red", "not_run": "yellow",
    "suspect_fake_pass": "bold magenta", "sim_garbage_graph_ok": "green", "graph_fail": "bold red",
}


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:.3g}"


def _diff_cell(case: CaseResult) -> str:
    m = case.metrics
    if not m:
        return "-"
    text = fmt(m.get("max_abs_diff"))
    extra = []
    if m.get("nan_count"):
        extra.append(f"{m['nan_count']} NaN")
    if m.get("inf_count"):
        extra.append(f"{m['inf_count']} inf")
    if case.precision == "not_applicable" and case.verdict == "sim_output_unwritten":
        extra.append("SIM garbage")
    return text + (f" ({', '.join(extra)})" if extra else "")


def print_report(report: Report, console: Console | None = None) -> None:
    console = console or Console()
    sub = report.submission
    console.print(f"[bold]{sub.name}[/] ({sub.kind}, sha256 {sub.sha256[:12]}) mode=[bold]{report.mode}[/] "
                  f"pypto {report.environment.pypto}, torch {report.environment.torch}")
    table = Table(show_lines=False)
    for col in ("case", "verdict", "structure", "stage", "launches", "written", "max |diff|", "graph",
                "AICore µs", "time s"):
        table.add_column(col, overflow="fold")
    for case in report.cases:
        gv = case.graph_verify or {}
        gm = gv.get("metrics") or {}
        graph = gv.get("status", "-") if not gm else f"{gv.get('status')} {fmt(gm.get('max_abs_diff'))}"
        table.add_row(
            escape(case.case), Text(case.verdict, style=VERDICT_STYLE.get(case.verdict, "")), case.structural, case.stage,
            str(case.kernel_launches), "-" if case.output_written is None else ("yes" if case.output_written else "no"),
            _diff_cell(case), graph,
            fmt(case.cost_model.aicore_time_us) if case.cost_model else "-", f"{case.duration_s:.2f}",
        )
    console.print(table)
    for case in report.cases:
        if case.error:
            where = f" ({case.error.file}:{case.error.line})" if case.error.file else ""
            first = case.error.message.splitlines()[0][:200] if case.error.message else ""
            console.print(f"[red]{escape(case.case)}[/]: {escape(case.error.type)}: {escape(first)}{escape(where)}")
        for d in case.diagnosis[:3]:
            console.print(f"  [bold]{escape(d.rule)}[/]{' (SIM only)' if d.sim_only else ''}: {escape(d.cause)}\n"
                          f"    fix: {escape(d.fix)}")
    if report.lint:
        console.print("[bold]lint[/]")
        for f in report.lint:
            console.print(escape(f"  {f.severity:7} {f.file}:{f.line} [{f.rule}] {f.message}"))
    console.print(f"{len(report.cases)} case(s) in {report.duration_s:.1f} s")
