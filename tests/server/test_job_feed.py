"""The console line of a finished job (server/commands/job_feed.py); the real console is read in
tests/e2e/test_cli.py."""
from __future__ import annotations

from server.commands.job_feed import job_line

URL = "http://127.0.0.1:8000"


def test_verdict_counts_most_first_and_the_link() -> None:
    line = job_line(7, "softmax", "sim", "failed",
                    {"verdicts": {"graph_fail": 1, "sim_garbage_graph_ok": 3}, "cases": 4}, None, URL)
    assert line == f"job 7 softmax (sim): sim_garbage_graph_ok ×3, graph_fail  {URL}/jobs/7"


def test_a_job_error_shows_its_first_line_cut_to_fit() -> None:
    error = "the job ran past its time limit of 720 s and was stopped by the worker after many retries\nmore"
    line = job_line(3, "axpy", "npu", "timeout", {}, error, URL)
    assert line.startswith("job 3 axpy (npu): timeout: the job ran past its time limit") and "more" not in line
    assert "…" in line and line.endswith(f"  {URL}/jobs/3")
    assert job_line(4, "axpy", "sim", "cancelled", {}, None, URL) == f"job 4 axpy (sim): cancelled  {URL}/jobs/4"


def test_the_line_leads_with_the_outcomes_in_the_words_every_surface_uses() -> None:
    """issue 35: gated_delta_rule read "not_run ×2" here and "kernel defect: not run" in the CLI."""
    summary = {"verdicts": {"not_run": 2}, "cases": 2, "outcome": "skipped", "outcomes": {"skipped": 2}}
    line = job_line(8, "gated_delta_rule", "sim", "failed", summary, None, URL)
    assert line == f"job 8 gated_delta_rule (sim): cannot judge here ×2 (not_run ×2)  {URL}/jobs/8"
