"""Shared setup for the docs/repro scripts: private dirs for pypto's files, and one small kernel.

Call `scratch()` before `import pypto`: pypto reads some of these variables at import.
"""
# No `from __future__ import annotations` here: pypto then sees string annotations and rejects
# the tensor parameters (docs/pypto.md §4).
import atexit
import os
import shutil
import tempfile
from pathlib import Path


def scratch(name: str) -> Path:
    """A fresh temp dir holding pypto's output folders, home and logs; ASCEND_HOME_PATH unset.

    It is removed at exit unless REPRO_KEEP=1 is set (then its path is printed). Child processes make theirs
    inside it, so the dirs of children that crash go with it.
    """
    parent = os.environ.get("REPRO_SCRATCH_PARENT")
    root = Path(tempfile.mkdtemp(prefix=f"pypto-repro-{name}-", dir=parent))
    if os.environ.get("REPRO_KEEP") == "1":
        print(f"(keeping {root})")
    elif parent is None:
        atexit.register(shutil.rmtree, root, True)
        os.environ["REPRO_SCRATCH_PARENT"] = str(root)
    for sub in ("output", "pypto_home", "logs"):
        (root / sub).mkdir()
    os.environ.pop("ASCEND_HOME_PATH", None)
    os.environ["TILE_FWK_OUTPUT_DIR"] = str(root / "output")
    os.environ["PYPTO_HOME"] = str(root / "pypto_home")
    os.environ["ASCEND_PROCESS_LOG_PATH"] = str(root / "logs")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return root


def scale_add(mode: str = "sim", **jit_options):  # type: ignore[no-untyped-def]
    """A jit kernel out = x * 2 + y on fp32 tensors, tiled 32 x 64 (shapes must be multiples)."""
    import pypto

    run_mode = pypto.RunMode.SIM if mode == "sim" else pypto.RunMode.NPU

    @pypto.frontend.jit(runtime_options={"run_mode": run_mode}, **jit_options)
    def scale_add_kernel(
        x: pypto.Tensor([], pypto.DT_FP32),
        y: pypto.Tensor([], pypto.DT_FP32),
        out: pypto.Tensor([], pypto.DT_FP32),
    ):
        pypto.set_vec_tile_shapes(32, 64)
        out[:] = x * 2.0 + y

    return scale_add_kernel


def inputs(shape=(64, 128), seed: int = 0):  # type: ignore[no-untyped-def]
    import torch

    torch.manual_seed(seed)
    return torch.randn(*shape), torch.randn(*shape)


class silenced:
    """Send fds 1 and 2 to a file while pypto runs (its C++ side prints straight to them)."""

    def __init__(self, path: str = os.devnull):
        self.path = path

    def __enter__(self) -> "silenced":
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = (os.dup(1), os.dup(2))
        target = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(target, 1)
        os.dup2(target, 2)
        os.close(target)
        return self

    def __exit__(self, *exc: object) -> None:
        import ctypes

        ctypes.CDLL(None).fflush(None)
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)


def load_calculator() -> str:
    """Load the graph-verify calculator into this process (after `import pypto`); say where it came from.

    Uses the copy `crosscheck calculator build` caches (CROSSCHECK_CACHE_DIR or ~/.cache/pto-crosscheck);
    without one, pypto builds its own at the first verified call (about a minute).
    """
    import ctypes
    from importlib import metadata

    import torch
    from pypto._utils import BuildOnlineManager

    base = Path(os.environ.get("CROSSCHECK_CACHE_DIR") or Path.home() / ".cache" / "pto-crosscheck")
    key = f"pypto-{metadata.version('pypto')}_torch-{torch.__version__}_abi{int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    lib = base / "calculator" / key.replace("+", "-") / "lib" / "libtile_fwk_calculator.so"
    if not lib.is_file():
        return "no cached calculator: pypto builds one at the first verified call"
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    BuildOnlineManager().calculator_loaded = True  # only after a successful load (see calculator.py)
    return f"cached calculator loaded from {lib}"
