"""After a job ends, its leader takes the evidence out of the job dir and checks it (docs/SECURITY.md).

Runs in the job leader: a separate process, outside the kernel's reach, that reads the job dir
through runtime.fence.jobfiles as the job's uid. It
- copies capped tails of stdout, stderr and the plogs into the case's evidence folder (a `Sink`
  only the harness owns; the job dir is never written);
- lists pypto's per-call folders in the job's output dir itself and checks each holds what
  pypto's native code writes for a compiled call (docs/pypto.md §2), then matches the job's
  launch events to them by name: a launch no folder corroborates does not count;
- reads each corroborated call's cost model, writes our Perfetto trace and lanes next to the
  copies, and reads pypto's verify CSVs;
- recompares the job's dumped output and golden bytes (runtime.evidence.dumps).
What it returns is report["evidence"]; runtime.judge.outcome decides with it.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path, PurePosixPath
from typing import Any

from runtime.evidence import costmodel, dumps, graph_verify
from runtime.evidence import verify_recheck
from runtime.fence.jobenv import JobDirs
from runtime.fence.jobfiles import JobFiles, Sink

LOG_COPY_BYTES = 4 * 1024 * 1024  # tail of stdout/stderr kept
PLOG_COPY_BYTES = 1024 * 1024  # tail of each plog kept
MAX_PLOG_FILES = 64
MAX_CALL_FOLDERS = 512
MAX_EVIDENCE_FILE_BYTES = 20 * 1024 * 1024
MAX_ELF_CHECKS = 16
MAX_REFUSED = 50
CALL_FOLDER = re.compile(r"^output_[0-9A-Za-z_]{1,120}$")  # output_<date>_<time>_<usec>_<pid>_<hexip>
COST_FILES = (costmodel.SWIM_FILE, costmodel.STAT_FILE, "_simulate.pipe.swim.json", "bubble_analysis.log")
ELF_MAGIC = b"\x7fELF"


def open_sink(request: dict[str, Any]) -> Sink | None:
    """The case's evidence folder, opened before the leader changes its mount namespace."""
    folder = request.get("evidence_dir")
    return Sink.open(folder) if folder else None


def collect(request: dict[str, Any], events: list[dict[str, Any]], uid: int | None, pid: int,
            mount_namespace: bool, sink: Sink | None) -> dict[str, Any]:
    """The harness's own view of a finished job; never raises (a failure becomes a note)."""
    start = time.perf_counter()
    dirs = JobDirs(Path(request["job_dir"]))
    files = JobFiles(dirs.root, uid)
    out: dict[str, Any] = {"dir": request.get("evidence_dir"), "notes": []}
    try:
        if sink is not None:
            _copy_logs(files, sink, request, uid, pid, mount_namespace)
        calls = _calls(files, request["mode"])
        launches = _match(events, calls, request, dirs)
        out["calls"] = calls
        out["launches"] = launches
        out["corroborated"] = sum(1 for launch in launches if launch["call"])
        out["cost_models"] = _cost_models(files, launches, sink, request["mode"])
        out.update(_pypto_verify(files, events, launches))
        out["recheck"] = _recheck(request, events, JobFiles(dirs.root / "results", uid))
        rechecked = out["recheck"].get("outputs") if isinstance(out["recheck"], dict) else None
        out["verify_csv_contradictions"] = out.pop("graph_csv_edits") + verify_recheck.contradictions(
            out.pop("graph_rows"), rechecked or [])
    except Exception as exc:  # noqa: BLE001 - the harness's own failure: reported, never fatal
        out["notes"].append(f"evidence collection failed: {type(exc).__name__}: {exc}"[:500])
    out["refused"] = files.refused[:MAX_REFUSED]
    out["duration_s"] = round(time.perf_counter() - start, 4)
    return out


def _copy_logs(files: JobFiles, sink: Sink, request: dict[str, Any], uid: int | None, pid: int,
               mount_namespace: bool) -> None:
    files.copy("stdout.txt", sink, "stdout.txt", LOG_COPY_BYTES, tail=True)
    files.copy("stderr.txt", sink, "stderr.txt", LOG_COPY_BYTES, tail=True)
    plogs = [(files, e.rel) for e in files.walk("logs", suffix=".log")]
    warm = request.get("warm_log_dir")
    if warm and not mount_namespace and pid:
        # Without a mount namespace pypto wrote into the warm parent's log dir, named by pid.
        shared = JobFiles(Path(warm), uid)
        plogs += [(shared, e.rel) for e in shared.walk(suffix=".log") if f"{pid}_" in PurePosixPath(e.rel).name]
        files.refused += shared.refused
    seen: set[str] = set()
    for source, rel in plogs[:MAX_PLOG_FILES]:
        name = PurePosixPath(rel).name
        if name not in seen:
            seen.add(name)
            source.copy(rel, sink, f"plog/{name}", PLOG_COPY_BYTES, tail=True)


def _calls(files: JobFiles, mode: str) -> dict[str, dict[str, bool]]:
    """pypto's call folders in the job's output dir, with what each holds."""
    calls: dict[str, dict[str, bool]] = {}
    for name, kind in files.listdir("output")[:MAX_CALL_FOLDERS]:
        if kind == "link":
            files.refused.append(f"output/{name}: a symbolic link")
        if kind != "dir" or not CALL_FOLDER.match(name):
            continue
        folder = f"output/{name}"
        # pypto creates kernel_aicore/ whenever it generates code; a failed compile leaves none.
        compiled = files.is_dir(f"{folder}/kernel_aicore")
        if mode == "sim":  # measured here: every SIM call also leaves these (docs/repro/call_folders.py)
            compiled = (compiled and files.size(f"{folder}/program.json") is not None
                        and _has_elf(files, f"{folder}/kernel_aicpu"))
        swim = files.size(f"{folder}/{costmodel.SIM_SUBDIR}/{costmodel.SWIM_FILE}") is not None
        calls[name] = {"compiled": compiled, "cost_model": swim}
    return calls


def _has_elf(files: JobFiles, folder: str) -> bool:
    """The host control-flow objects pypto builds with g++ for every compiled call (docs/pypto.md §2)."""
    names = [n for n, kind in files.listdir(folder) if kind == "file"][:MAX_ELF_CHECKS]
    for name in names:
        try:
            if files.head(f"{folder}/{name}", 4) == ELF_MAGIC:
                return True
        except OSError:
            continue
    return False


def _call_name(output_dir: Any, request: dict[str, Any], dirs: JobDirs) -> str | None:
    """The call folder a launch event names, if it lies directly in the job's own output dir.

    The event's path is never opened: only its last component is looked up among the folders
    the harness listed itself.
    """
    if not isinstance(output_dir, str) or not output_dir:
        return None
    path = PurePosixPath(os.path.normpath(output_dir))
    parents = {os.path.normpath(str(dirs.output)), os.path.normpath(request.get("env", {}).get("TILE_FWK_OUTPUT_DIR")
                                                                    or str(dirs.output))}
    return path.name if str(path.parent) in parents else None


def _match(events: list[dict[str, Any]], calls: dict[str, dict[str, bool]], request: dict[str, Any],
           dirs: JobDirs) -> list[dict[str, Any]]:
    """Each launch event with the call folder that corroborates it, or None and why not.

    SIM compiles and simulates on every call, so each launch has its own folder (docs/pypto.md §2);
    on the NPU a compiled kernel is cached per input signature (docs/pypto.md §1), so launches may
    share one.
    """
    sim = request["mode"] == "sim"
    # On the NPU a cached call may name a folder without code of its own (not measured here): any
    # folder pypto wrote counts once code generation happened somewhere in this job.
    generated = not sim and any(c["compiled"] for c in calls.values())
    used: set[str] = set()
    out = []
    for index, ev in enumerate(e for e in events if e.get("event") == "launch"):
        name = _call_name(ev.get("output_dir"), request, dirs)
        call, why = None, ""
        if name is None:
            why = "names no folder in the job's output dir"
        elif name not in calls:
            why = f"names {name}, which pypto did not write"
        elif not (calls[name]["compiled"] or generated) or (sim and not calls[name]["cost_model"]):
            why = f"{name} lacks pypto's compile and cost-model files"
        elif sim and name in used:
            why = f"{name} is claimed by an earlier launch"
        else:
            call = name
            used.add(name)
        out.append({"index": index, "kernel": str(ev.get("kernel", ""))[:200], "call": call, "why": why,
                    "failed": bool(ev.get("error"))})
    return out


def _cost_models(files: JobFiles, launches: list[dict[str, Any]], sink: Sink | None,
                 mode: str) -> list[dict[str, Any]]:
    """The cost model of each corroborated SIM launch; copies, trace and lanes into launch<i>/."""
    if mode != "sim":
        return []
    models = []
    for launch in launches:
        if not launch["call"]:
            continue
        call = f"output/{launch['call']}"
        prefix = f"launch{launch['index']}"
        model = costmodel.parse(files, call)
        if model is not None:
            models.append(model.__dict__)
        if sink is None:
            continue
        for name in COST_FILES:
            files.copy(f"{costmodel.sim_rel(call)}/{name}", sink, f"{prefix}/{name}", MAX_EVIDENCE_FILE_BYTES)
        for folder, csv in _verify_csvs(files, call):
            files.copy(f"{call}/{folder}/{csv}", sink, f"{prefix}/verify/{csv}", MAX_EVIDENCE_FILE_BYTES)
        cores = costmodel.read_swim(files, call)
        if cores:
            sink.write(f"{prefix}/{costmodel.TRACE_FILE}", json.dumps(costmodel.trace(cores)).encode())
            sink.write(f"{prefix}/lanes.json", json.dumps(costmodel.lanes(cores)).encode())
    return models


def _verify_csvs(files: JobFiles, call: str) -> list[tuple[str, str]]:
    return [(folder, name) for folder, kind in files.listdir(call) if kind == "dir" and folder.startswith("verify_")
            for name, k in files.listdir(f"{call}/{folder}") if k == "file" and name.endswith(".csv")]


def _pypto_verify(files: JobFiles, events: list[dict[str, Any]], launches: list[dict[str, Any]]) -> dict[str, Any]:
    """pypto's own graph-verify verdicts from the CSVs: the graph call(s), then the pass-verify re-run."""
    order = [e.get("event") for e in events if e.get("event") in ("launch", "result")]
    graph_count = order.index("result") if "result" in order else len(order)
    groups: dict[str, list[dict[str, str]]] = {"pypto_graph": [], "pypto_passes": []}
    by_launch: dict[int, list[dict[str, str]]] = {}  # the graph calls' golden rows (runtime.evidence.verify_recheck)
    for launch in launches:
        if not launch["call"]:
            continue
        key = "pypto_graph" if launch["index"] < graph_count else "pypto_passes"
        for folder in sorted({f for f, _ in _verify_csvs(files, f"output/{launch['call']}")}):  # each CSV once
            data = files.read_or_none(f"output/{launch['call']}/{folder}/{graph_verify.CSV_NAME}",
                                      graph_verify.MAX_CSV_BYTES)
            rows = graph_verify.csv_rows(data or b"")
            groups[key] += rows
            if key == "pypto_graph":
                by_launch.setdefault(launch["index"], []).extend(verify_recheck.golden_rows(rows))
    found: dict[str, Any] = {key: graph_verify.summarize_pypto(rows) if rows else None for key, rows in groups.items()}
    found["graph_rows"], found["graph_csv_edits"] = _as_launched(events, by_launch)
    return found


def _as_launched(events: list[dict[str, Any]],
                 by_launch: dict[int, list[dict[str, str]]]) -> tuple[dict[int, list[dict[str, str]]], list[str]]:
    """The graph calls' golden rows as the job sent them right after each launch (runtime.evidence.launch_seal),
    and where the files the leader read differ from them: edited after the launch, or never sent."""
    sent: dict[int, list[dict[str, str]]] = {}
    seen: set[tuple[int, str]] = set()
    edits: list[str] = []
    for e in events:
        if e.get("event") != "graph_csv" or not isinstance(e.get("launch"), int):
            continue
        key = (e["launch"], str(e.get("folder", "")))
        if key in seen:
            edits.append(f"the verify CSV {key[1]} of launch {key[0]} was sent more than once")
            continue
        seen.add(key)
        rows = verify_recheck.golden_rows(graph_verify.csv_rows(str(e.get("text", "")).encode()))
        sent.setdefault(e["launch"], []).extend(rows)
    for launch, rows in sorted(by_launch.items()):
        if launch not in sent:
            edits.append(f"pypto's verify CSV of launch {launch} was not sent as the launch left it")
        elif sent[launch] != rows:
            edits.append(f"pypto's verify CSV of launch {launch} changed after the launch (as left: "
                         f"{_brief(sent[launch])}; now: {_brief(rows)})")
    return {launch: sent.get(launch, rows) for launch, rows in by_launch.items()}, edits


def _brief(rows: list[dict[str, str]]) -> str:
    return "; ".join(f"{r.get('verifyResult')} max |diff| {r.get('maxAbsDiff')}, {r.get('errorCount')} error(s)"
                     for r in rows[:2]) or "no golden row"


def _recheck(request: dict[str, Any], events: list[dict[str, Any]], results: JobFiles) -> dict[str, Any] | None:
    """The harness's compare of the dumped bytes, for a package case that reached its result."""
    if request.get("kind") != "package" or not any(e.get("event") == "result" for e in events):
        return None
    goldens = [e for e in events if e.get("event") == "golden"]
    setup = next((e for e in events if e.get("event") == "graph_verify_setup"), {})
    graph_active = bool((request.get("graph_verify") or {}).get("enabled") and setup.get("available"))
    tolerance = (float(request["tolerance"][0]), float(request["tolerance"][1]))
    try:
        if len(goldens) != 1:
            raise dumps.DumpError(f"the job reported its goldens {len(goldens)} times, not once")
        cfg, case = request.get("graph_verify") or {}, request.get("case") or {}
        # the rows a sliced launch verifies, drawn as the job's graph_verify.install draws them
        sample = (cfg.get("slice_count"), int(case.get("seed") or 0))
        checked = dumps.recheck(results, tolerance, graph_active, goldens[0].get("sha256"),
                                map_output=request.get("mode") == "npu", sample=sample)
    except (dumps.DumpError, OSError) as exc:
        checked = {"error": str(exc)[:500]}
    results_refused = results.refused
    if results_refused:
        checked.setdefault("refused", results_refused[:MAX_REFUSED])
    return checked
