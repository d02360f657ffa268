"""One job's private directories and the only environment variables it sees."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

# Variables passed through from the host when set. CANN's own variables only reach NPU jobs.
PASS_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TZ")
NPU_PASS_THROUGH_PREFIXES = ("ASCEND_", "LD_LIBRARY_PATH", "PYTHONPATH", "TOOLCHAIN_HOME", "ASCEND_OPP_PATH",
                             "CROSSCHECK_NPU_TEST_DOUBLE")
JOB_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class JobDirs:
    root: Path

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pypto_home(self) -> Path:
        return self.root / "home" / ".pypto"

    @property
    def results(self) -> Path:
        """Where the job dumps output and golden bytes for the harness to recompare (runtime.evidence.dumps)."""
        return self.root / "results"

    @property
    def stdout(self) -> Path:
        return self.root / "stdout.txt"

    @property
    def stderr(self) -> Path:
        return self.root / "stderr.txt"

    def writable(self) -> list[Path]:
        """Dirs the job writes; handed to the job uid."""
        return [self.work, self.home, self.pypto_home, self.pypto_home / "run", self.output, self.logs, self.results]

    def create(self) -> "JobDirs":
        for d in (self.root, self.src, *self.writable()):
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(0o755)  # whatever the worker's umask: the job's uid must reach its dirs
        return self


def job_environment(dirs: JobDirs, mode: str, config_path: Path | None, device_id: int | None) -> dict[str, str]:
    env = {
        "PATH": JOB_PATH,
        "LANG": "C.UTF-8",
        "HOME": str(dirs.home),
        "PYPTO_HOME": str(dirs.pypto_home),
        "TILE_FWK_OUTPUT_DIR": str(dirs.output),
        "ASCEND_PROCESS_LOG_PATH": str(dirs.logs),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if config_path is not None:
        env["TILEFWK_CONFIG_PATH"] = str(config_path)
    for key in PASS_THROUGH:
        if key in os.environ:
            env[key] = os.environ[key]
    if mode == "npu":
        for key, value in os.environ.items():
            if key.startswith(NPU_PASS_THROUGH_PREFIXES):
                env[key] = value
        env["PATH"] = os.environ.get("PATH", JOB_PATH)
        if device_id is not None:
            env["TILE_FWK_DEVICE_ID"] = str(device_id)  # the job's card, for scripts that read it (docs/pypto.md §5)
    return env


def write_sim_config(pypto_lib_dir: Path, dest: Path) -> Path:
    """pypto's tile_fwk_config.json with the simulator's drawing scripts silenced (docs/pypto.md §2).

    The drawing scripts need matplotlib, print tracebacks without it and cost ~0.2 s per call;
    we write the Perfetto trace ourselves (costmodel.trace, into the harness's evidence folder).
    """
    config = json.loads((pypto_lib_dir / "configs" / "tile_fwk_config.json").read_text())
    args = config["global"]["simulation"].setdefault("args", [])
    args[:] = [a for a in args if not a.startswith("Model.drawPngThresholdCycle=")]
    args.append("Model.drawPngThresholdCycle=0")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(config, indent=1))
    dest.chmod(0o644)
    return dest
