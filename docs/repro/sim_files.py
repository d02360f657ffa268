"""docs/pypto.md §2: the files one SIM call writes, and how the printed summary follows from them.

Runs x * 2 + y in SIM in a child process (pypto's C++ side prints to the real stdout), then reads
what it left behind. The second run names a copy of tile_fwk_config.json whose simulation args carry
Model.drawPngThresholdCycle=0 (TILEFWK_CONFIG_PATH); the third tries the same through
pypto.set_global_config inside the process.
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from common import inputs, scale_add, scratch


def child(shape: tuple[int, int], via_global_config: bool) -> None:
    import pypto
    import torch

    if via_global_config:  # the in-process route: does it reach the simulator?
        args = pypto.get_global_config("simulation.args")
        pypto.set_global_config("simulation.args", [*args, "Model.drawPngThresholdCycle=0"])
    kernel = scale_add()
    x, y = inputs(shape)
    start = time.perf_counter()
    kernel(x, y, torch.zeros_like(x))
    print(f"CALL_S={time.perf_counter() - start:.2f}", flush=True)
    print(f"FOLDER={pypto.pypto_impl.LogTopFolder()}", flush=True)


def quiet_config(dest: Path) -> Path:
    import importlib.util

    lib = Path(importlib.util.find_spec("pypto").origin).parent / "lib"
    config = json.loads((lib / "configs" / "tile_fwk_config.json").read_text())
    config["global"]["simulation"].setdefault("args", []).append("Model.drawPngThresholdCycle=0")
    dest.write_text(json.dumps(config))
    return dest


def run(shape: tuple[int, int], quiet: str = "") -> None:
    root = scratch("sim-files")
    env = dict(os.environ)
    if quiet == "config":
        env["TILEFWK_CONFIG_PATH"] = str(quiet_config(root / "tile_fwk_config.json"))
    proc = subprocess.run([sys.executable, __file__, "child", *map(str, shape), quiet], capture_output=True, text=True,
                          env=env, cwd=root)
    found = dict(re.findall(r"^(CALL_S|FOLDER)=(.*)$", proc.stdout, re.M))
    folder = Path(found["FOLDER"])
    sim = folder / "CostModelSimulationOutput"
    print(f"\n== shape {shape}, { {'config': 'TILEFWK_CONFIG_PATH', 'global': 'set_global_config'}.get(quiet, 'stock config')}: exit {proc.returncode}, "
          f"call {found['CALL_S']} s")
    print("output folder:", folder.relative_to(root))
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"folder size: {size / 1e6:.1f} MB")
    print("folder holds:", sorted(p.name for p in folder.iterdir()),
          "| kernel_aicpu file types:", sorted({p.suffix for p in (folder / "kernel_aicpu").iterdir()}))
    print("CostModelSimulationOutput:", sorted(p.name for p in sim.iterdir() if p.is_file()))
    print("stderr tracebacks:", proc.stderr.count("Traceback"),
          "| mentions matplotlib:", "matplotlib" in proc.stderr)

    cores = json.loads((sim / "_simulate.swim.json").read_text())
    lanes = [c for c in cores if c["coreType"] in ("AIC", "AIV")]
    tasks = [t for c in lanes for t in c["tasks"]]
    start, end = min(t["execStart"] for t in tasks), max(t["execEnd"] for t in tasks)
    e2e_us = (end - start) / 1800
    util = sum(t["execEnd"] - t["execStart"] for t in tasks) / (len(lanes) * (end - start))
    print(f"core types in swim.json: {sorted({c['coreType'] for c in cores})}, AIC+AIV lanes: {len(lanes)}, "
          f"tasks: {len(tasks)}, task keys: {sorted(tasks[0])[:6]}...")
    print(f"from swim.json: end-to-end {e2e_us:.2f} us, utilisation {100 * util:.2f}%")
    printed = re.findall(r"AICore (End-to-End Time|Utilization):\s*([\d.]+)", proc.stdout)
    print("printed by pypto:", printed or "nothing")
    report = (sim / "_simulate.stat.report.txt").read_text()
    print("stat report:", re.search(r"Total Cycles\.*:\s*(\d+)", report).group(0).replace(".", ""),
          "|", re.search(r"Total Submit Tasks\.*:\s*(\d+)", report).group(0).replace(".", ""))
    print("under PYPTO_HOME:", sorted(str(p.relative_to(root)) for p in (root / "pypto_home").rglob("*.json")))
    print("under ASCEND_PROCESS_LOG_PATH:", sorted(str(p.relative_to(root / "logs")) for p in (root / "logs").rglob("*")
                                                   if p.is_file()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child((int(sys.argv[2]), int(sys.argv[3])), sys.argv[4:5] == ["global"])
    else:
        run((64, 128))
        run((64, 128), quiet="config")  # TILEFWK_CONFIG_PATH
        run((64, 128), quiet="global")  # pypto.set_global_config in the process
        # Either side of 500000 total cycles: above it the per-pipe and swimlane files are skipped.
        run((1024, 2048))
        run((2048, 2048))
