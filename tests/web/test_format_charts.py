"""Number formatting and chart geometry: the edge cases pages meet."""
from __future__ import annotations

import math
from types import SimpleNamespace

from web import charts, source
from web import format as fmt


def test_significant_digits() -> None:
    assert [fmt.sig(v) for v in (None, 0, 3, 1234.5, 0.000123456, 1.58e35, 0.5, float("nan"), float("inf"))] == \
        ["—", "0", "3", "1.23e+03", "1.23e-4", "1.58e35", "0.5", "NaN", "∞"]
    assert fmt.sig(16384) == "16,384" and fmt.magnitude(1.58e35) == "10^35" and fmt.magnitude(0.0) == "0"
    assert fmt.duration(0.7818) == "782 ms" and fmt.duration(3725) == "62 min 5 s" and fmt.percent(0.013889) == "1.39 %"


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
    assert charts.diff_history([]).empty
    chart = charts.diff_history([run(1, "sim", 1e35, 0.0), run(2, "npu", 2e-4), run(3, "sim", float("nan"), 1e-7)])
    by_name = {s.name: s for s in chart.series}
    assert len(by_name["SIM raw"].points) == 1 and chart.notes == ["SIM raw: non-finite values are left out"]
    assert by_name["graph verify"].points[0]["marker"] == "zero"
    ys = [p["y"] for s in chart.series for p in s.points]
    assert all(charts.TOP <= y <= charts.HEIGHT - charts.BOTTOM for y in ys)
    # higher values sit higher (smaller y) on a log scale
    assert by_name["SIM raw"].points[0]["y"] < by_name["NPU"].points[0]["y"] < by_name["graph verify"].points[0]["y"]
    assert chart.tolerance and chart.tolerance["label"] == "atol 0.001"
    single = charts.diff_history([run(7, "npu", 5e-4)])
    assert len(single.series[0].points) == 1 and math.isfinite(single.series[0].points[0]["x"])


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
