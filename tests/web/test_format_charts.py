"""Number formatting and chart geometry: the edge cases pages meet."""
from __future__ import annotations

import math
from types import SimpleNamespace

from web import charts, diff_chart, source
from web import format as fmt


def test_significant_digits() -> None:
    assert [fmt.sig(v) for v in (None, 0, 3, 1234.5, 0.000123456, 1.58e35, 0.5, float("nan"), float("inf"))] == \
        ["—", "0", "3", "1.23e+03", "1.23e-4", "1.58e35", "0.5", "NaN", "∞"]
    assert fmt.sig(16384) == "16,384" and fmt.magnitude(1.58e35) == "10^35" and fmt.magnitude(0.0) == "0"
    assert fmt.duration(0.7818) == "782 ms" and fmt.duration(3725) == "62 min 5 s" and fmt.percent(0.013889) == "1.39 %"
    # never an exponent where 3 digits of ms would round to 1000 (issue 35)
    assert [fmt.duration(s) for s in (0.9996, 0.9994, 0.0999, 1.0)] == ["0.9996 s", "999 ms", "99.9 ms", "1 s"]


def test_sim_garbage_marking() -> None:
    unwritten = SimpleNamespace(max_abs_diff=1.6e35, nan_count=0, output_written=False, verdict="sim_output_unwritten")
    assert fmt.sim_diff(unwritten)["garbage"] and fmt.sim_diff(unwritten)["text"] == "10^35"
    nan_only = SimpleNamespace(max_abs_diff=None, nan_count=12, output_written=False, verdict="sim_garbage_graph_ok")
    assert fmt.sim_diff(nan_only)["text"] == "NaN" and fmt.sim_diff(nan_only)["garbage"]
    written = SimpleNamespace(max_abs_diff=2e-4, nan_count=0, output_written=True, verdict="pass")
    assert not fmt.sim_diff(written)["garbage"]
    broken = SimpleNamespace(max_abs_diff=None, nan_count=None, output_written=None, verdict="structural_error")
    assert fmt.sim_diff(broken)["text"] == "—"
    assert fmt.sim_diff(None)["title"] == "no SIM result"


def test_ticks_escapes_then_marks_code() -> None:
    assert str(fmt.ticks("call `f(<x>)` now")) == "call <code>f(&lt;x&gt;)</code> now"


def run(job_id: int, mode: str, diff: float | None, graph: float | None = None, atol: float | None = 1e-3) -> dict:
    return {"job_id": job_id, "mode": mode, "max_abs_diff": diff, "graph_max_abs_diff": graph, "atol": atol,
            "aicore_time_us": 4.0, "utilization": 0.05, "created_at": None, "cases": 1}


def test_history_chart_log_scale_and_edge_cases() -> None:
    assert diff_chart.build([]).empty
    chart = diff_chart.build([run(1, "sim", 1e35, 0.0), run(2, "npu", 2e-4), run(3, "sim", float("nan"), 1e-7)])
    by_name = {s.name: s for s in chart.series}
    # SIM garbage (1e35, NaN) is clamped into the band at the top, inside the axes.
    assert [p["marker"] for p in by_name["SIM raw"].points] == ["garbage", "garbage"] and chart.band
    assert by_name["graph verify"].points[0]["marker"] == "zero"
    ys = [p["y"] for s in chart.series for p in s.points]
    xs = [p["x"] for s in chart.series for p in s.points]
    assert all(charts.TOP <= y <= charts.HEIGHT - charts.BOTTOM for y in ys)
    assert all(charts.LEFT <= x <= charts.WIDTH - charts.RIGHT for x in xs)
    # higher values sit higher (smaller y) on a log scale; the real range is not flattened
    assert by_name["SIM raw"].points[0]["y"] < by_name["NPU"].points[0]["y"] < by_name["graph verify"].points[0]["y"]
    assert [t["label"] for t in chart.y_ticks][-1] == "1e-3"
    assert chart.tolerance and chart.tolerance["label"] == "atol 0.001"


def test_a_failed_graph_verify_at_zero_is_a_failure_not_a_healthy_point() -> None:
    chart = diff_chart.build([run(1, "sim", 0.0, 0.0), run(2, "sim", 0.0, 0.0)], failed_graph={1, 2})
    graph = next(s for s in chart.series if s.name == "graph verify")
    assert {p["marker"] for p in graph.points} == {"failed"}
    assert "output identical to the golden but not written by the kernel" in graph.points[0]["title"]


def test_one_submission_is_a_compact_figure() -> None:
    single = diff_chart.build([run(7, "npu", 5e-4)])
    assert single.compact == [{"name": "NPU", "text": "5.00e-4", "css": ""},
                              {"name": "tolerance", "text": "atol 0.001", "css": "muted"}]
    fake = diff_chart.build([run(8, "sim", 0.0, 0.0)], failed_graph={8})
    assert fake.compact and fake.compact[1]["text"].startswith("✗ failed: output identical to the golden")
    assert charts.linear_trend([run(1, "sim", 1.0)], "aicore_time_us", "t", "cost", "µs").compact


def test_runs_of_one_submission_share_a_slot() -> None:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    runs = [dict(run(1, "sim", 1e30, 0.0), created_at=t0), dict(run(2, "npu", 1e-4), created_at=t0),
            dict(run(3, "sim", 1e30, 0.0), created_at=t0 + timedelta(hours=1)),
            dict(run(4, "npu", 2e-4), created_at=t0 + timedelta(days=1))]
    assert [[r["job_id"] for r in slot] for slot in diff_chart.slots(runs)] == [[1, 2], [3], [4]]


def test_linear_trend_and_lanes() -> None:
    assert charts.linear_trend([run(1, "npu", 1.0)], "aicore_time_us", "t", "cost", "µs").empty
    trend = charts.linear_trend([run(1, "sim", 1.0), run(2, "sim", 1.0)], "utilization", "u", "util", "%", 100)
    assert trend.y_ticks[-1]["label"] == "5"
    assert charts.lanes_timeline([]) is None
    lanes = [{"core": "AIV_3", "type": "AIV", "tasks": [[1.0, 2.0, 1]]},
             {"core": "AIC_0", "type": "AIC", "tasks": [[0.5, 3.0, 2], [3.0, 3.5, 3]]}]
    t = charts.lanes_timeline(lanes)
    assert t is not None and [lane["core"] for lane in t.lanes] == ["AIC_0", "AIV_3"] and t.total == 3
    assert t.lanes[0]["bars"][0]["x"] == t.left and math.isclose(t.span_us, 3.0)


def test_source_excerpts_from_bundles() -> None:
    sources = {"pkg/k_impl.py": "a\nb\nc\nd\ne\nf\ng\nh", "other/k_impl.py": "x"}
    ex = source.excerpt(sources, "/tmp/job/src/pkg/k_impl.py", 5)
    assert ex and ex["file"] == "pkg/k_impl.py" and [line["no"] for line in ex["lines"]] == [2, 3, 4, 5, 6, 7, 8]
    assert source.excerpt(sources, "pkg/k_impl.py", 99) is None and source.excerpt(sources, "", 1) is None
    assert source.bundle_sources(b"not a zip", "x.zip") == {}
    assert source.bundle_sources(b"print(1)\n", "k.py") == {"k.py": "print(1)\n"}


def test_source_from_a_tarball() -> None:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"line1\nline2\n"
        info = tarfile.TarInfo("./pkg/k_impl.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    assert source.bundle_sources(buf.getvalue(), "pkg.tar.gz") == {"pkg/k_impl.py": "line1\nline2\n"}


def test_cases_share_the_frame_of_the_operators_runs() -> None:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    at = [t0, t0, t0 + timedelta(hours=1), t0 + timedelta(days=1)]
    runs = [dict(run(j + 1, m, 1e-3), created_at=at[j], first_job_id=j + 1)
            for j, m in enumerate(("sim", "npu", "sim", "npu"))]
    a = [dict(runs[0], max_abs_diff=1e-5), dict(runs[3], max_abs_diff=2e-4)]
    b = [dict(runs[2], max_abs_diff=1e35, graph_max_abs_diff=0.0)]  # b ran in the second submission only
    # a downsampled point starting inside the second slot belongs to it
    c = [dict(run(9, "npu", 5e-5), created_at=t0 + timedelta(hours=2), first_job_id=9)]
    frame = diff_chart.frame_for(runs, a + b + c)
    charts_ = [diff_chart.build(points, frozenset(), frame, small=True) for points in (a, b, c)]
    assert len({tuple(t["label"] for t in ch.y_ticks) for ch in charts_}) == 1 and all(ch.band for ch in charts_)
    assert charts_[0].width == charts.SMALL_WIDTH and charts_[0].x_ticks[-1]["label"].startswith("12-02")
    slot_x = [charts_[0].x_ticks[0]["x"], None, charts_[0].x_ticks[-1]["x"]]
    by = {s.name: [p["x"] for p in s.points] for s in charts_[0].series}
    assert by == {"SIM raw": [slot_x[0] - 8], "NPU": [slot_x[2] + 8]}
    middle = [p["x"] for s in charts_[1].series for p in s.points if s.name == "SIM raw"]
    assert slot_x[0] < middle[0] + 8 < slot_x[2]
    assert [p["x"] for s in charts_[2].series for p in s.points] == [middle[0] + 16]
