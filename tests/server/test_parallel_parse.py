"""Submissions read at the same moment (issue 35): every one accepted, no SystemError.

CPython 3.11 keeps the AST builder's recursion count in one place per interpreter, so two threads
building trees at once can trip "AST constructor recursion depth mismatch" (docs/platform.md §6).
The API reads each upload's Python in its request thread (runtime/intake); the parses take turns
(runtime/intake/python_ast.py).
"""
from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from runtime.intake import imports, submission, testmodule
from tests.server.conftest import EXAMPLES, REPO, make_tokens

URL = "/api/v1/submissions"
OPERATORS = ("scale_add", "softmax", "rmsnorm", "attention", "matmul", "gelu", "tiling_bug", "wrong_maths")
THREADS = 8
READS = 40  # per thread; unguarded, some thread's parse failed within its first 30 in each of 12 tries here


class Finalizer:
    """Garbage with a finalizer, as a busy server makes (sessions, responses, temp dirs)."""

    def __del__(self) -> None:
        pass  # any Python code run by the collector mid-parse lets another thread take the GIL


def churn(stop: threading.Event) -> None:
    while not stop.is_set():
        a, b = Finalizer(), Finalizer()
        a.other, b.other = b, a  # a cycle: freed by the collector, not by reference counting


@pytest.fixture
def busy_interpreter() -> Iterator[None]:
    """The collector runs often and threads switch at every chance: what a loaded `up` does, sooner."""
    threshold, interval, stop = gc.get_threshold(), sys.getswitchinterval(), threading.Event()
    thread = threading.Thread(target=churn, args=(stop,), daemon=True)
    gc.set_threshold(10)
    sys.setswitchinterval(1e-5)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)


def read_upload(_: int) -> None:
    """What loading a gym test module, a script and a package reads of their Python."""
    module = EXAMPLES / "gym-checkout/tests/ops/vector/RowSquareMean/test_row_square_mean.py"
    for _ in range(READS):
        assert testmodule.test_functions(module) == ["test_level0", "test_level1"]
        assert imports.tree_root(module) == EXAMPLES / "gym-checkout"
        assert submission.jit_callers(EXAMPLES / "softmax/softmax_impl.py") == ["softmax_wrapper"]


def test_uploads_read_in_parallel_threads_raise_nothing(busy_interpreter: None) -> None:
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(read_upload, range(THREADS)))  # a SystemError in any thread is raised here


def test_parallel_submissions_are_all_accepted(busy_interpreter: None, make_app, settings, files_of, make_zip):
    app = make_app(settings)
    bundles = {name: make_zip(files_of(name), top=name) for name in OPERATORS}
    script = (EXAMPLES / "scripts/softmax_script.py").read_bytes()
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {make_tokens(app)['submit']}"}
        start = threading.Barrier(2 * THREADS)

        def submit(i: int) -> tuple[int, str]:
            name = OPERATORS[i % len(OPERATORS)]
            upload = (f"{name}.zip", bundles[name]) if i < THREADS else ("softmax_script.py", script)
            start.wait()
            r = client.post(URL, headers=headers, data={"operator": f"{name}_{i}"}, files={"file": upload})
            return r.status_code, r.text[:300]

        with ThreadPoolExecutor(2 * THREADS) as pool:
            answers = list(pool.map(submit, range(2 * THREADS)))
    assert [a for a in answers if a[0] != 202] == []


def test_every_parse_of_ours_takes_its_turn() -> None:
    packages = ("runtime", "client", "jobqueue", "worker", "server", "web")
    bare = [str(p.relative_to(REPO)) for pkg in packages for p in (REPO / pkg).rglob("*.py")
            if "ast.parse(" in p.read_text(encoding="utf-8").replace("python_ast.parse(", "")]
    assert bare == ["runtime/intake/python_ast.py"]
