"""Graph verify on row slices (docs/pypto.md §10): which kernels the source proves row-independent, how many
rows a slice gets, and a sliced run's graph evidence."""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch

from runtime.evidence import row_slices, slice_sample

ROWS = '''
ROW_TILE = 8


def {name}(x, gamma, out):
    hidden = x.shape[2]{setup}
    pypto.set_vec_tile_shapes(1, ROW_TILE, hidden)
    for i in pypto.loop({count}, name="ROWS", idx_name="i"):
        rows = pypto.cast(pypto.view(x, [1, ROW_TILE, hidden], [0, {offset}, 0]), pypto.DT_FP32)
        y = rows * pypto.cast(gamma, pypto.DT_FP32){extra}
        pypto.assemble(pypto.cast(y, pypto.DT_FP16), [0, i * ROW_TILE, 0], out)
'''
VARIANTS = {  # name: (loop count, view offset in dim 1, an extra term); the kernels are never run
    "rows": ("x.shape[1] // ROW_TILE", "i * ROW_TILE", ""),
    "literal_count": ("512", "i * ROW_TILE", ""),
    "whole_x_read": ("x.shape[1] // ROW_TILE", "i * ROW_TILE", " + pypto.sum(x)"),
    "shifted_rows": ("x.shape[1] // ROW_TILE", "i * ROW_TILE + 1", ""),
    "walked_size_read": ("x.shape[1] // ROW_TILE", "i * ROW_TILE", " * x.shape[1]"),
    "other_tile": ("x.shape[1] // ROW_TILE", "i * 16", ""),
    "walked_size_bound_outside": ("x.shape[1] // ROW_TILE", "i * ROW_TILE", " / total"),
}


def _kernels(tmp_path: Path) -> ModuleType:
    source = "".join(ROWS.format(name=name, count=c, offset=o, extra=e,
                                 setup="\n    total = x.shape[1]" if name.endswith("outside") else "")
                     for name, (c, o, e) in VARIANTS.items())
    path = tmp_path / "row_kernels.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location("row_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_source_proves_a_row_walk_and_nothing_that_reads_across_rows(tmp_path):
    kernels = _kernels(tmp_path)
    assert row_slices.row_loop(kernels.rows) == row_slices.RowLoop(dim=1, tile=8, sliced=("out", "x"))
    for name in VARIANTS:
        if name != "rows":
            assert row_slices.row_loop(getattr(kernels, name)) is None, name


def test_a_prefill_rms_norm_is_cut_into_slices_whose_graph_fits_a_quarter_of_the_default_memory():
    launch_bytes = 2 * (4096 * 3072 * 2) + 3072 * 2  # x and out fp16, gamma
    budget = int(11.8 * 2**30) // 4
    rows = row_slices.rows_per_slice(4096, 8, launch_bytes, budget)
    assert rows == 512  # 8 slices of 64 iterations: about 1 GiB of graph each, against about 65 GiB whole
    assert row_slices.GRAPH_BYTES_FACTOR * launch_bytes * (rows / 4096) * (rows / 8) <= budget
    assert row_slices.rows_per_slice(128, 8, 2 * 128 * 3072 * 2, budget) is None  # fits whole
    assert row_slices.rows_per_slice(4100, 8, launch_bytes, budget) is None  # no whole tiles


class _Wrapper:
    def __init__(self, fn):
        self._original_func = fn


def test_the_plan_slices_the_walked_tensors_and_their_goldens_and_keeps_the_rest_whole(tmp_path):
    kernels = _kernels(tmp_path)
    x, gamma, out = torch.zeros(1, 64, 32), torch.ones(32), torch.zeros(1, 64, 32)
    golden = torch.arange(64 * 32.0).reshape(1, 64, 32)
    plan = row_slices.plan(_Wrapper(kernels.rows), (x, gamma, out), [golden], budget_bytes=1)
    assert (plan.dim, plan.rows, len(plan.chunks), plan.verified(8)) == (1, 8, 8, [[0, 64]])
    args, goldens = plan.chunks[plan.starts.index(24)]
    assert args[1] is gamma and args[0].shape == (1, 8, 32) and args[0].data_ptr() == x[:, 24:32].data_ptr()
    assert torch.equal(goldens[0], golden[:, 24:32])
    assert row_slices.plan(_Wrapper(kernels.rows), (x, gamma, out), [golden], budget_bytes=2**30) is None
    wide = torch.zeros(2, 64, 32)  # slices of dim 1 under a leading 2 would not be contiguous
    assert row_slices.plan(_Wrapper(kernels.rows), (wide, gamma, wide), [], budget_bytes=1) is None
    rowed_gamma = torch.ones(1, 64, 32)  # a tensor of the same rows the loop does not slice: used whole
    assert row_slices.plan(_Wrapper(kernels.rows), (x, rowed_gamma, out), [], budget_bytes=1) is None


@pytest.mark.slow  # real pypto compiles
@pytest.mark.parametrize("wrong, verdict", [("", "sim_garbage_graph_ok"), (" * 1.5", "graph_fail")])
def test_a_launch_over_its_graph_budget_is_verified_on_row_slices(warm_sim, calculator_cache, tmp_path, wrong,
                                                                  verdict):
    from rich.console import Console

    from runtime.cli.console import print_report
    from runtime.runner import RunOptions, run_submission
    from tests.runtime.test_standin_references import CASES, IMPL

    pkg = tmp_path / "row_rms"
    pkg.mkdir()
    (pkg / "row_rms_golden.py").write_text(
        "import torch\n\n\ndef row_rms_golden(x, gamma):\n    xf = x.float()\n"
        "    return (xf / torch.sqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma.float()).half()\n")
    (pkg / "row_rms_impl.py").write_text(IMPL.replace("{wrong}", wrong))
    (pkg / "test_cases.json").write_text(CASES)
    options = RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w", graph_slice_bytes=1)
    report = run_submission(pkg, options, warm=warm_sim)
    case = report.cases[0]
    assert case.verdict == verdict, case.verdict_reason
    assert case.graph_verify["row_slices"] == [{"kernel": "row_rms_kernel", "dim": 1, "rows": 8, "slices": 2,
                                                "launched": 2, "verified": [[0, 16]], "of": 16}]
    assert case.kernel_launches == 2  # one per slice, each corroborated by its own pypto call folder
    assert case.graph_verify["metrics"]["shape_match"] and case.outputs[0]["metrics"]["shape_match"]
    console = Console(width=200, record=True, force_terminal=False)
    print_report(report, console)
    assert ("graph verify on row slices: row_rms_kernel launched on 2 of 2 slices of 8 rows of dim 1, which its "
            "loop makes independent; graph evidence for all 16 rows") in " ".join(console.export_text().split())


MODULE_TEST = '''

def test_rows(device):
    import torch_npu
    from numpy.testing import assert_allclose
    torch.manual_seed(3)
    x = torch.randn(1, 32, 256, dtype=torch.float16).to(device)
    gamma = torch.randn(256, dtype=torch.float16).to(device)
    out = row_rms_wrapper(x, gamma)
    golden = torch_npu.npu_rms_norm(x, gamma, epsilon=1e-6)[0]
    assert_allclose(out.float().cpu().numpy(), golden.float().cpu().numpy(), rtol=1e-2, atol=1e-2)
'''


@pytest.mark.slow  # a real pypto compile
@pytest.mark.parametrize("wrong, status", [("", "pass"), (" * 1.5", "fail")])
def test_a_test_modules_launch_runs_on_every_row_slice_and_its_own_assert_judges_the_whole(
        warm_sim, calculator_cache, tmp_path, wrong, status):
    """A module's assert reads every row of the output: all its slices are launched and the assert is matched
    to the whole sliced output (instrument._sliced_holding); its golden by torch_npu.npu_rms_norm judges it."""
    from runtime.runner import RunOptions, run_submission
    from tests.runtime.test_standin_references import IMPL

    path = tmp_path / "test_rows.py"
    path.write_text(IMPL.replace("{wrong}", wrong) + MODULE_TEST)
    options = RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w", graph_slice_bytes=1)
    case = run_submission(path, options, warm=warm_sim).cases[0]
    assert case.graph_verify["status"] == status, case.verdict_reason
    assert case.verdict == ("sim_garbage_graph_ok" if status == "pass" else "graph_fail"), case.verdict_reason
    assert case.kernel_launches == 4 and case.graph_verify["asserts_judged"] == 1
    assert case.graph_verify["row_slices"] == [{"kernel": "row_rms_kernel", "dim": 1, "rows": 8, "slices": 4,
                                                "launched": 4, "verified": [[0, 32]], "of": 32}]
    assert case.cpu_references == ["torch_npu.npu_rms_norm"]


def test_a_sample_is_the_first_and_last_slices_and_others_by_the_seed_and_names_its_rows(tmp_path):
    order = slice_sample.sample(8, None, 5)
    assert order[:2] == [0, 7] and sorted(order) == list(range(8)) and order == slice_sample.sample(8, None, 5)
    assert slice_sample.sample(3, 3, 5) == [0, 2, 1] and slice_sample.sample(8, 1, 5) == [0, 7]  # never fewer than 2
    picked = slice_sample.sample(8, 3, 5)
    assert picked == order[:3]
    assert row_slices.spans([0, 3, 7], 8) == [[0, 8], [24, 32], [56, 64]]
    assert row_slices.spans([0, 1, 7], 8) == [[0, 16], [56, 64]]  # adjacent slices merge
    kernels = _kernels(tmp_path)
    x, gamma, out = torch.zeros(1, 64, 32), torch.ones(32), torch.zeros(1, 64, 32)
    plan = row_slices.plan(_Wrapper(kernels.rows), (x, gamma, out), [out.clone()], budget_bytes=1, count=3, seed=5)
    assert plan.slices == 8 and plan.starts == [k * 8 for k in picked] and len(plan.chunks) == 3
    assert plan.verified(3) == _spans(picked, 8) and plan.verified(2) == [[0, 8], [56, 64]]


def _spans(slices: list[int], rows: int) -> list[list[int]]:
    return row_slices.spans(slices, rows)


def test_the_harness_compares_the_claimed_rows_only_when_they_are_the_cases_sample(tmp_path):
    """The job says which rows it verified; the leader compares those only when they are the first two or more
    slices of slice_sample.sample's order for the request's count and seed, so a forged claim cannot pick the rows."""
    from runtime.evidence import dumps
    from runtime.fence.jobfiles import JobFiles

    golden = torch.arange(48 * 4.0).reshape(1, 48, 4)
    out = golden.clone()
    out[:, 40:] += 1  # wrong in the last slice
    picked = slice_sample.sample(6, 3, 11)
    other = next(k for k in range(1, 5) if k not in picked)
    for verified, error in ((_spans(picked, 8), None), (_spans(picked[:2], 8), None),
                            (_spans([0, picked[2]], 8), "not slices"),
                            (_spans([0, other, 5], 8), "not the slices the case's sample launches"),
                            ("all", "not valid")):
        rows = {"dim": 1, "verified": verified, "of": 48}
        folder = tmp_path / str(len(tuple(tmp_path.iterdir())))
        dumps.write(folder, [dumps.OutputDump(golden=golden, output=out, before=torch.zeros_like(out), rows=rows)])
        files = JobFiles(folder)
        if error:
            with pytest.raises(dumps.DumpError, match=error):
                dumps.recheck(files, (1e-3, 1e-3), True, [dumps.sha256(golden)], sample=(3, 11))
            continue
        checked = dumps.recheck(files, (1e-3, 1e-3), True, [dumps.sha256(golden)], sample=(3, 11))
        graph = checked["graph_metrics"]
        assert graph["numel"] == sum(b - a for a, b in verified) * 4
        assert graph["mismatch_count"] == 8 * 4  # the last slice's rows, and no others
        assert graph["rows"] == {"dim": 1, "verified": verified, "of": 48}


SCALE = '''
import pypto
import torch

ROW_TILE = 8


@pypto.frontend.jit
def scale_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    hidden = x.shape[2]
    pypto.set_vec_tile_shapes(1, ROW_TILE, hidden)
    for i in pypto.loop(x.shape[1] // ROW_TILE, name="ROWS", idx_name="i"):
        rows = pypto.view(x, [1, ROW_TILE, hidden], [0, i * ROW_TILE, 0])
        y = rows * 2.0{wrong}
        pypto.assemble(y, [0, i * ROW_TILE, 0], out)


def scale_wrapper(x):
    out = torch.empty_like(x)
    scale_kernel(x, out)
    return out
'''
# x is arange: slice k (8 rows of 16) holds the values 128 k .. 128 k + 127; this bump is non-zero on slice k only.
BUMP = " + pypto.minimum(pypto.relu(rows - {low:.1f}), pypto.relu(rows * -1.0 + {high:.1f}))"
SCALE_CASES = '''{"op_name": "scale", "test_cases": [{"id": "rows_48x16", "seed": 11,
  "inputs": [{"name": "x", "shape": [1, 48, 16], "dtype": "float32", "init": "arange"}],
  "output": {"shape": [1, 48, 16], "dtype": "float32"}, "rtol": 1e-3, "atol": 1e-3}]}'''


def _scale(tmp_path: Path, name: str, bad_slice: int) -> Path:
    pkg = tmp_path / name / "scale"
    pkg.mkdir(parents=True)
    (pkg / "scale_golden.py").write_text("def scale_golden(x):\n    return x * 2\n")
    bump = BUMP.format(low=128.0 * bad_slice + 0.5, high=128.0 * bad_slice + 127.5)
    (pkg / "scale_impl.py").write_text(SCALE.replace("{wrong}", bump))
    (pkg / "test_cases.json").write_text(SCALE_CASES)
    return pkg


@pytest.mark.slow  # real pypto compiles
def test_a_bug_in_a_slice_not_launched_is_never_claimed_and_the_verified_rows_are_named(warm_sim, calculator_cache,
                                                                                       tmp_path):
    """6 slices of 8 rows, at most 3 launched (the first, the last, one by the case's seed): a kernel wrong in a slice
    not launched gets graph pass on the named rows only, and the same kernel with every slice launched, or wrong
    in the seed's slice, gets graph fail."""
    from rich.console import Console

    from runtime.cli.console import print_report
    from runtime.runner import RunOptions, run_submission

    picked = slice_sample.sample(6, 3, 11)
    hidden = next(k for k in range(1, 5) if k not in picked)
    merged = _spans(picked, 8)
    spans = ", ".join(f"{a}-{b - 1}" for a, b in merged)
    runs = {}
    for name, bad, count in (("hidden", hidden, 3), ("every", hidden, None), ("seen", picked[2], 3)):
        # A long case timeout: the third slice is launched however slow the host (slice_sample.TIME_SHARE).
        options = RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / name / "w", graph_slice_bytes=1,
                             graph_slice_count=count, timeout_s=3600)
        runs[name] = run_submission(_scale(tmp_path, name, bad), options, warm=warm_sim)
    case = runs["hidden"].cases[0]
    assert case.verdict == "sim_garbage_graph_ok", case.verdict_reason
    assert case.kernel_launches == 3
    assert case.graph_verify["row_slices"] == [{"kernel": "scale_kernel", "dim": 1, "rows": 8, "slices": 6,
                                                "launched": 3, "verified": merged, "of": 48}]
    assert case.graph_verify["metrics"]["numel"] == 24 * 16  # the harness compared the verified rows only
    assert f"graph evidence for rows {spans} only (24 of 48" in case.verdict_reason
    console = Console(width=200, record=True, force_terminal=False)
    print_report(runs["hidden"], console)
    assert (f"scale_kernel launched on 3 of 6 slices of 8 rows of dim 1, which its loop makes independent; graph "
            f"evidence for rows {spans} only (24 of 48; the other slices were not launched)") in " ".join(console.export_text().split())
    for name in ("every", "seen"):
        other = runs[name].cases[0]
        assert other.verdict == "graph_fail" and other.graph_verify["status"] == "fail", (name, other.verdict_reason)
    assert runs["every"].cases[0].graph_verify["row_slices"][0]["verified"] == [[0, 48]]


def test_past_its_time_share_a_package_launches_the_first_and_last_slices_and_a_script_all(tmp_path):
    """GraphRun.slice_launch with the time share already spent (slice_until in the past): a package's launch
    still gets its first and last slice, the coverage names their rows; a script's gets every slice."""
    from runtime.evidence import graph_verify, instrument
    from runtime.fence.events import Events

    kernels = _kernels(tmp_path)
    for script, until, launched in ((False, 0.0, [0, 56]), (False, float("inf"), None), (True, 0.0, None)):
        rec = instrument.Recorder("sim", Events(None))
        rec.graph_on, rec.goldens = script, []
        x, gamma, out = torch.zeros(1, 64, 32), torch.ones(32), torch.zeros(1, 64, 32)
        run = graph_verify.GraphRun(rec, None, (1e-3, 1e-3), False, slice_budget=1, slice_seed=5, slice_until=until)
        starts: list[int] = []
        run.slice_launch(_Wrapper(kernels.rows), (x, gamma, out), {},
                         lambda _w, a, _g, _o: starts.append((a.data_ptr() - x.data_ptr()) // (32 * 4)))
        if launched is None:
            assert sorted(starts) == list(range(0, 64, 8)) and starts[:2] == [0, 56], (script, until)
            assert row_slices.coverage(rec, out) is None  # every row verified: compared whole
        else:
            assert starts == launched
            assert row_slices.coverage(rec, out) == {"dim": 1, "verified": [[0, 8], [56, 64]], "of": 64}
            assert row_slices.coverage(rec, out[:, :8]) is None  # a slice of it is not the whole output


def test_rows_the_harness_compared_in_part_are_named_in_the_verdict_whatever_the_jobs_events_say():
    """The verdict's reason names the rows from the harness's recompare (its metrics' `rows`), so a job that
    launched some slices only and sent no event about it still has them named; a timeout claims none."""
    from runtime.judge import labels
    from runtime.report import CaseResult

    rows = {"dim": 1, "verified": [[0, 512], [3584, 4096]], "of": 4096}
    case = CaseResult(operator="rms", case="prefill", verdict="sim_garbage_graph_ok", verdict_reason="graph ok",
                      graph_verify={"status": "pass", "metrics": {"numel": 3145728, "rows": rows}})
    labels.add(case, [])
    assert case.verdict_reason == ("graph ok; graph verify on row slices: graph evidence for rows 0-511, 3584-4095 "
                                   "only (1024 of 4096; the other slices were not launched)")
    stopped = CaseResult(operator="rms", case="prefill", verdict="timeout", verdict_reason="timeout after 300 s",
                         graph_verify={"status": "unavailable", "metrics": None})
    labels.add(stopped, [{"event": "graph_row_slices", "kernel": "rms_kernel", "dim": 1, "rows": 512, "slices": 8,
                          "launched": 2, "verified": [[0, 512], [3584, 4096]], "of": 4096}])
    assert stopped.graph_verify["row_slices"][0]["verified"] == [] and stopped.verdict_reason == "timeout after 300 s"
    assert labels.row_slices_text(stopped.graph_verify["row_slices"][0]).endswith("no graph evidence (no graph verdict)")
