"""pypto's graph-verify calculator, built once per (pypto, torch, C++ ABI) and cached.

Stock pypto 0.2.0 rebuilds this C++ library with cmake in every process on first verify
(about 60 s and 1.4 GB on 2 cores, docs/pypto.md §3). We build it once, with pypto's own build steps,
into a lasting directory, and job processes only load it (about 2 ms).
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

LIB_NAME = "libtile_fwk_calculator.so"


def default_cache_dir() -> Path:
    """Where the graph-verify calculator is cached (CROSSCHECK_CACHE_DIR overrides)."""
    env = os.environ.get("CROSSCHECK_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pto-crosscheck"


@dataclass(frozen=True)
class CalculatorKey:
    pypto: str
    torch: str
    cxx11_abi: int

    @property
    def dirname(self) -> str:
        return f"pypto-{self.pypto}_torch-{self.torch}_abi{self.cxx11_abi}".replace("+", "-")


def current_key() -> CalculatorKey:
    """The key of this interpreter's pypto and torch (imports torch, not pypto)."""
    import torch

    return CalculatorKey(metadata.version("pypto"), torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI))


def library_path(cache_dir: Path, key: CalculatorKey | None = None) -> Path:
    key = key or current_key()
    return Path(cache_dir) / "calculator" / key.dirname / "lib" / LIB_NAME


def cached_for_installed(cache_dir: Path) -> bool:
    """Whether the cache holds a calculator for the installed pypto and torch, read from package metadata
    only: no torch import, so a run handed to the run daemon stays light. `status` is the exact check."""
    key = CalculatorKey(metadata.version("pypto"), metadata.version("torch"), 0)
    prefix = key.dirname.rsplit("_abi", 1)[0]
    return any((d / "lib" / LIB_NAME).is_file() for d in (Path(cache_dir) / "calculator").glob(prefix + "_abi*"))


def status(cache_dir: Path | None, pypto_version: str | None = None) -> tuple[bool, str]:
    """(ready, reason). A pypto that graph verify does not support needs no calculator (docs/versions.md §2)."""
    from runtime.evidence.graph_verify import version_problem

    problem = version_problem(pypto_version or metadata.version("pypto"))
    if problem:
        return False, problem
    if cache_dir is None:
        return False, "no calculator cache dir configured"
    lib = library_path(cache_dir)
    if lib.is_file():
        return True, str(lib)
    if (Path(cache_dir) / "calculator" / ".building").exists():
        return False, "the graph-verify calculator is still being built (about a minute)"
    return False, f"the graph-verify calculator is not built yet: run `crosscheck calculator build` (expected {lib})"


def build(cache_dir: Path, jobs: int | None = None, log=print) -> Path:  # type: ignore[no-untyped-def]
    """Build the calculator into the cache (idempotent; concurrent builders wait for one another)."""
    import pypto  # noqa: F401  (pypto's build helper needs the package importable)
    from pypto._utils import BuildOnlineManager

    target = library_path(cache_dir)
    if target.is_file():
        return target
    root = Path(cache_dir) / "calculator"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        marker = root / ".building"
        marker.write_text(str(os.getpid()))
        try:
            start = time.perf_counter()
            mgr = BuildOnlineManager()
            torch_ctx = mgr._TorchContext()
            cmake = mgr._CMakeContext()
            with tempfile.TemporaryDirectory(dir=root) as tmp:
                ctx = mgr._CMakeContext.CompileContext(src_dir=Path(mgr.pkg_lib_dir, "calculator"), tmp_dir=Path(tmp))
                ctx.cfg_cmd_ext = (f"-DPY3_MOD_TORCH_VERSION={torch_ctx.torch_version}"
                                   f" -DPY3_MOD_TORCH_ROOT_PATH={torch_ctx.torch_root_dir}"
                                   f" -DPY3_MOD_TORCH_C_GLIBCXX_USE_CXX11_ABI={torch_ctx.torch_c_use_cxx11_abi}")
                ctx.build_job_num = jobs or os.cpu_count() or 2
                install = cmake.compile(ctx=ctx)
                built = Path(install, "lib", LIB_NAME)
                if not built.is_file():
                    raise RuntimeError(f"the calculator build produced no {LIB_NAME}")
                final = target.parent.parent
                staging = Path(tmp) / "final"
                (staging / "lib").mkdir(parents=True)
                shutil.copy2(built, staging / "lib" / LIB_NAME)
                if final.exists():
                    shutil.rmtree(final)
                staging.rename(final)  # atomic publish: a reader sees all or nothing
            for p in [root, final, final / "lib", target]:
                p.chmod(0o755)
            log(f"calculator built in {time.perf_counter() - start:.1f} s: {target}")
            return target
        finally:
            marker.unlink(missing_ok=True)


def load(lib: Path) -> None:
    """Load the cached calculator into this process and tell pypto it is there.

    Setting pypto's flag without loading the library segfaults at the first verify, so the flag
    is only set after a successful load.
    """
    from pypto._utils import BuildOnlineManager

    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    BuildOnlineManager().calculator_loaded = True
