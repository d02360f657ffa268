"""In the job process, at each launch: pypto's own code runs it, and pypto's verify CSV is taken as it left it
(docs/SECURITY.md).

- **The kernel object.** pypto's launch calls its own methods through the kernel object (`self._run_with_cpu`
  runs after the graph wrote the outputs), so an attribute set on that object shadows pypto's method for that
  kernel. Before and after each launch such attributes are reported and, before it, removed: the launch runs
  the class's methods. A kernel object of another class than pypto's that overrides one is reported too, as
  are pypto's launch code replaced since the seal and what of the submission's could run inside the launch
  without a patch (its threads, garbage-collector callbacks, signal handlers, profile or trace functions).
- **pypto's verify CSV.** The calculator's numbers reach a file the job can edit. Right after the launch,
  before the submission's code runs again, its stdio is flushed and the golden rows of this launch's CSVs are
  sent to the leader, which holds the file it reads later against them.

Every function used here is captured when the module is imported (in the warm parent), so patching `os`,
`ctypes`, `csv` or pypto's module attributes later changes nothing it does.
"""
from __future__ import annotations

import _thread
import ctypes
import gc
import importlib.util
import io
import os
import signal
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import _csv

from runtime.fence import audit

CSV_NAME = "verify_result_brief.csv"
MAX_CSV_BYTES = 1024 * 1024  # per CSV sent; a graph call's golden rows are a few hundred bytes
_FFLUSH = ctypes.CDLL(None).fflush
_LISTDIR, _OPEN, _READ, _CLOSE = os.listdir, os.open, os.read, os.close
_O_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
_READER, _STRINGIO = _csv.reader, io.StringIO
_GETATTRIBUTE = object.__getattribute__
_DICT_KEYS, _DICT_POP, _DICT_GET, _MODULES = dict.keys, dict.pop, dict.get, sys.modules
_TYPE, _ISINSTANCE, _LIST, _SORTED, _STR, _NEXT, _VARS = type, isinstance, list, sorted, str, next, vars
_MRO = type.__dict__["__mro__"].__get__
_THREADS, _GC_CALLBACKS, _GETPROFILE, _GETTRACE = _thread._count, gc.callbacks, sys.getprofile, sys.gettrace
_GETSIGNAL, _DEFAULT_INT = signal.getsignal, signal.default_int_handler
_SIGNALS = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the runtime package
_FRAMES, _IDENT, _SETPROFILE = sys._current_frames, _thread.get_ident, sys.setprofile
_SUBMITTED = audit.submitted
_SPEC = importlib.util.find_spec("pypto")
_PYPTO = os.path.dirname(_SPEC.origin or "") if _SPEC is not None else "/nonexistent"
# pypto reads the kernel's source by evaluating its expressions (as `<string>` code): the kernel's own code, and
# the helpers it calls, run there on purpose, before the graph is built (docs/SECURITY.md).
_READING = frozenset(os.path.join(_PYPTO, "frontend", "parser", n) for n in ("parser.py", "evaluator.py"))

Emit = Callable[[str, dict[str, Any]], None]


class Seal:
    """pypto's jit class as it was before any submission code ran, and the job's safe event writer."""

    def __init__(self, cls: type, log_top: Callable[[], Any], emit: Emit | None, modules: list[Any]):
        self.cls, self.log_top, self.emit, self.modules = cls, log_top, emit, modules
        self.methods = {name: value for klass in reversed(cls.__mro__) if klass is not object
                        for name, value in vars(klass).items()
                        if isinstance(value, (staticmethod, classmethod)) or callable(value)}
        self.code = self._code()
        self.threads = _THREADS()
        self.idents = set(_FRAMES())
        self.alive: set[int] = set()

    def _code(self) -> dict[str, int]:
        """Who pypto's launch path is: its jit class's attributes and its launch modules' functions."""
        found = {f"{self.cls.__qualname__}.{n}": id(v) for n, v in _LIST(_VARS(self.cls).items())}
        for module in self.modules:
            found.update({f"{module.__name__}.{n}": id(v) for n, v in _LIST(_VARS(module).items()) if callable(v)})
        return found

    def concurrent(self, when: str, index: int) -> None:
        """Report what of the submission's could run Python inside a launch without patching anything: its own
        threads, a garbage-collector callback, a signal handler, a profile or trace function. Inside the launch
        it could overwrite the graph's result and pypto's buffered CSV before the harness reads them."""
        found = []
        frames, me = _FRAMES(), _IDENT()
        own = {t for t in frames if t != me and t not in self.idents}
        # A thread of its own that runs its code, or ends inside the launch (a timer that fired). An idle pool
        # thread waiting in the standard library (torch's, concurrent.futures') is no such thread.
        running = [t for t in own if _runs_submitted(frames[t])]
        ended = [t for t in self.alive if t not in frames] if when == "during" else []
        self.alive = own if when == "before" else set()
        if running:
            found.append(f"{len(running)} Python thread(s) of its own running its code")
        if ended:
            found.append(f"{len(ended)} Python thread(s) of its own that ended inside it")
        if _GC_CALLBACKS:
            found.append("a garbage-collector callback")
        if _GETPROFILE() is not None or _GETTRACE() is not None:
            found.append("a profile or trace function")
        for sig in _SIGNALS:
            handler = _GETSIGNAL(sig)
            code = getattr(handler, "__code__", None)
            if callable(handler) and handler is not _DEFAULT_INT and not (
                    code is not None and code.co_filename.startswith(_HERE)):
                found.append(f"a handler of signal {int(sig)}")
                break
        if found and self.emit is not None:
            self.emit("tamper", {"what": f"had {', '.join(found)} able to run during the launch ({when} launch "
                                         f"{index})", "file": "", "line": 0})

    def allow(self, cls: type, name: str) -> None:
        """The harness's own patch of pypto's class (runtime.evidence.graph_verify), taken as pypto's."""
        self.code[f"{cls.__qualname__}.{name}"] = id(_VARS(cls)[name])

    def renew(self) -> None:
        """Take pypto's launch code as it is now: only before any submitted code ran (runtime.evidence.instrument)."""
        self.code = self._code()
        self.threads = _THREADS()  # the harness's own, if any
        self.idents = set(_FRAMES())

    def replaced(self, when: str, index: int) -> None:
        """Report pypto's launch code that is not what it was before the submission ran (a class patch)."""
        now = self._code()
        changed = _SORTED(n for n, v in self.code.items() if now.get(n) != v)
        if changed and self.emit is not None:
            self.emit("tamper", {"what": f"replaced pypto's {', '.join(changed[:5])} ({when} launch {index})",
                                 "file": "", "line": 0})

    def kernel_object(self, kernel: Any, when: str, index: int, remove: bool) -> None:
        """Report (and with `remove`, drop) what on the kernel object shadows pypto's methods."""
        found = []
        cls = _TYPE(kernel)
        if cls is not self.cls:
            mro = _MRO(cls)
            before = mro[:mro.index(self.cls)] if self.cls in mro else mro
            found += [f"its class {k.__qualname__} overrides {n}" for k in before for n in _VARS(k)
                      if n in self.methods][:5]
        own = _GETATTRIBUTE(kernel, "__dict__")
        for name in _LIST(_DICT_KEYS(own)):
            if _ISINSTANCE(name, _STR) and name in self.methods and not name.startswith("__"):
                found.append(f"an attribute {name} on the kernel object shadows pypto's method")
                if remove:
                    _DICT_POP(own, name, None)
        if found and self.emit is not None:
            self.emit("tamper", {"what": f"{'; '.join(found)[:400]} ({when} launch {index})", "file": "", "line": 0})

    @contextmanager
    def inside(self, index: int) -> Iterator[None]:
        """Report the first Python of the submission's that runs inside this launch in this thread, outside pypto's
        reading of the kernel: a `__del__`, a tensor subclass's `__torch_function__`, a weakref or gc callback, an
        audit hook; whatever road it came by, its first frame is seen before its first line runs."""
        before, state = _GETPROFILE(), {"sent": False}

        def watch(frame: Any, event: str, _arg: Any) -> None:
            if event != "call" or state["sent"] or not _submitted_frame(frame):
                return
            caller = frame.f_back
            while caller is not None:
                if caller.f_code.co_filename in _READING:
                    return
                caller = caller.f_back
            state["sent"] = True
            if self.emit is not None:
                code = frame.f_code
                self.emit("tamper", {"what": f"ran its own Python ({code.co_name}) inside launch {index}, outside "
                                             "pypto's reading of the kernel", "file": code.co_filename[-300:],
                                     "line": frame.f_lineno})

        _SETPROFILE(watch)
        try:
            yield
        finally:
            swapped = _GETPROFILE() is not watch
            _SETPROFILE(before)
            if swapped and self.emit is not None:
                self.emit("tamper", {"what": f"replaced the harness's profile function inside launch {index}",
                                     "file": "", "line": 0})

    def verify_csvs(self, index: int) -> None:
        """Send this launch's verify CSVs' golden rows as they are now, before the submission runs again."""
        if self.emit is None:
            return
        _FFLUSH(None)  # pypto writes the CSV through stdio buffers (docs/pypto.md §3)
        try:
            folder = _STR(self.log_top())
            names = _SORTED(n for n in _LISTDIR(folder) if n.startswith("verify_"))
        except (OSError, TypeError, ValueError):
            return
        for name in names:
            text = _read(f"{folder}/{name}/{CSV_NAME}")
            if text is not None:
                self.emit("graph_csv", {"launch": index, "folder": name, "text": _golden_lines(text)})


def _runs_submitted(frame: Any) -> bool:
    while frame is not None:
        if _submitted_frame(frame):
            return True
        frame = frame.f_back
    return False


def _submitted_frame(frame: Any) -> bool:
    """Whether the frame runs the submission's code. Code made at run time (`<string>`) is judged by the module
    whose globals it runs in: a namedtuple's, the standard library's or a library's is theirs."""
    name = frame.f_code.co_filename
    if not (name.startswith("<") and not name.startswith("<frozen")):
        return _SUBMITTED(name)
    module = _DICT_GET(frame.f_globals, "__name__")
    if _ISINSTANCE(module, _STR) and module.startswith("namedtuple_"):
        return False
    found = _DICT_GET(_MODULES, module) if _ISINSTANCE(module, _STR) else None
    try:
        file = _DICT_GET(_GETATTRIBUTE(found, "__dict__"), "__file__") if found is not None else None
    except AttributeError:
        file = None
    return not _ISINSTANCE(file, _STR) or _SUBMITTED(file)


def _read(path: str) -> str | None:
    try:
        fd = _OPEN(path, _O_FLAGS)
    except OSError:
        return None
    try:
        return _READ(fd, MAX_CSV_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        _CLOSE(fd)


def _golden_lines(text: str) -> str:
    """The header and the rows comparing with the golden (pypto's pass-verify rows are left out: many, and
    the harness holds no second copy to check them against)."""
    lines = text.splitlines()
    if not lines:
        return ""
    try:
        header = _NEXT(_READER(_STRINGIO(lines[0])))
        column = header.index("referPassName")
    except (StopIteration, ValueError, _csv.Error):
        return text[:MAX_CSV_BYTES]
    kept = [lines[0]]
    for line in lines[1:]:
        try:
            fields = _NEXT(_READER(_STRINGIO(line)))
        except (StopIteration, _csv.Error):
            continue
        if len(fields) > column and fields[column].strip() == "golden":
            kept.append(line)
    return "\n".join(kept) + "\n"
