"""In the job process: report the submission's first forbidden act to the leader as it happens (docs/SECURITY.md).

A Python audit hook (`sys.addaudithook`), installed before any submitted code runs, sees every `ctypes` use,
every file opened for writing, renamed or removed, and every `__code__` or `__class__` assignment (Python 3.11
audits no other attribute set: class patches are caught at each launch, runtime.evidence.launch_seal). The
submission cannot remove it. When such an act comes from code outside the harness and touches what the verdict
rests on (pypto's call folders, its logs, a process's memory file, pypto's, torch's or our functions and
objects, raw memory through `ctypes`), the hook writes a `tamper` event on the job's event pipe right then,
before the code that did it can undo it: the leader holds it, and the case can no longer be accepted.

Everything the hook calls is captured when it is installed, so patching `os`, `json`, `sys` or the builtins
afterwards changes nothing it does. Whose act it is: the innermost frame outside the standard library; the
harness's own frames (under the `runtime` package's folder) and installed libraries' (site-packages, pypto,
torch, numpy) are allowed: they act on their own (classes set as they import, a library's own `ctypes` or log
files on an NPU host), and what a submission routes through them is still held against the CSV as the launch
left it. Code compiled under one of those files' names (other than by an import) is itself reported.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
import types
from json.encoder import encode_basestring_ascii
from pathlib import PurePath
from typing import Any, Callable

from runtime.devices.host import TEST_DOUBLE_ENV

MAX_REPORTS = 20  # the first acts are what matter; more is noise on the pipe
# Audited events about files: (name, index of the path argument).
FILE_EVENTS = {"os.rename": 0, "os.remove": 0, "os.rmdir": 0, "os.truncate": 0, "os.link": 1, "os.symlink": 1,
               "shutil.rmtree": 0, "shutil.move": 0, "os.chmod": 0, "os.utime": 0}
GUARDED_MODULES = ("pypto", "torch", "numpy", "runtime")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the runtime package
_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep
_SITE = tuple(sorted({sysconfig.get_paths()[k] + os.sep for k in ("purelib", "platlib")}))
# Installed code acts on its own (pypto's, torch's classes set as they import; a library's ctypes or log files).
_LIBRARIES = tuple(os.path.dirname(importlib.util.find_spec(m).origin or "") + os.sep  # type: ignore[union-attr]
                   for m in ("pypto", "torch", "numpy") if importlib.util.find_spec(m) is not None)
# Our tests' torch_npu double (docs/npu.md §5) stands where an installed torch_npu would: trusted alike.
_DOUBLE = tuple(os.path.abspath(d) + os.sep for d in [os.environ.get(TEST_DOUBLE_ENV, "")] if d)
_TRUSTED = (_HERE, *_SITE, *_LIBRARIES, *_DOUBLE)


def submitted(filename: str) -> bool:
    """Code of the submission's (or code it compiled): neither the standard library's, an installed library's
    nor the harness's. `<string>` and the like count as the submission's (runtime.evidence.launch_seal)."""
    if filename.startswith("<frozen "):
        return False
    if filename.startswith(_STDLIB) and not filename.startswith(_SITE):
        return False
    return not filename.startswith(_TRUSTED)


def emitter(fd: int) -> Callable[[str, dict[str, Any]], None]:
    """A writer of flat events ({str: str | int | bool}) on `fd` through references taken now."""
    write, enc, isinstance_, str_, int_, bool_ = os.write, encode_basestring_ascii, isinstance, str, int, bool

    def emit(event: str, fields: dict[str, Any]) -> None:
        parts = ['{"event": ', enc(event)]
        for key, value in fields.items():
            if isinstance_(value, bool_):
                text = "true" if value else "false"
            elif isinstance_(value, int_):
                text = int_.__repr__(value)
            else:
                text = enc(str_(value))
            parts += [", ", enc(key), ": ", text]
        data = ("".join(parts) + "}\n").encode()
        while data:
            data = data[write(fd, data):]

    return emit


def install(fd: int, guarded_dirs: list[str]) -> None:
    """Add the hook; call once, before any submitted code runs (runtime.job.child)."""
    emit = emitter(fd)
    getframe, isinstance_, type_, str_, bytes_, len_, tuple_ = sys._getframe, isinstance, type, str, bytes, len, tuple
    realpath, join, getcwd, fsdecode = os.path.realpath, os.path.join, os.getcwd, os.fsdecode
    function_t, purepath = types.FunctionType, PurePath
    guarded = tuple_(realpath(d) + os.sep for d in guarded_dirs)
    state = {"busy": False, "sent": 0}

    def culprit() -> tuple[str, int] | None:
        """(file, line) of the innermost frame outside the standard library; None when it is the harness's or
        an installed library's (pypto, torch, numpy, site-packages: their own acts, e.g. on an NPU host)."""
        frame = getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if not (name.startswith("<frozen ") or (name.startswith(_STDLIB) and not name.startswith(_SITE))):
                return None if name.startswith(_TRUSTED) else (name, frame.f_lineno)
            frame = frame.f_back
        return ("<unknown>", 0)

    def path_of(value: Any) -> str | None:
        if isinstance_(value, bytes_):
            value = fsdecode(value)
        elif isinstance_(value, purepath):
            value = purepath.__str__(value)
        if not isinstance_(value, str_):
            return None
        return realpath(join(getcwd(), value))

    def touches(value: Any) -> bool:
        path = path_of(value)
        # A process's memory file writes any byte of it (pypto's buffered CSV, the outputs) without ctypes.
        return path is not None and ((path + os.sep).startswith(guarded) or (
            path.startswith("/proc/") and path.endswith("/mem")))

    def guarded_object(obj: Any) -> bool:
        if isinstance_(obj, type_):
            module = type_.__dict__["__module__"].__get__(obj)
        elif type_(obj) is function_t:
            module = obj.__module__
        else:
            module = type_.__dict__["__module__"].__get__(type_(obj))
        return isinstance_(module, str_) and module.split(".")[0] in GUARDED_MODULES

    def what(event: str, args: tuple[Any, ...]) -> str | None:
        if event.startswith("ctypes."):
            return f"used ctypes ({event})"
        if event == "open" and len_(args) >= 3:
            mode, flags = args[1], args[2]
            writes = (isinstance_(mode, str_) and any(c in mode for c in "wax+")) or (
                isinstance_(flags, int) and flags != -1 and flags & WRITE_FLAGS)
            return f"opened {path_of(args[0])} for writing" if writes and touches(args[0]) else None
        if event in FILE_EVENTS and len_(args) > FILE_EVENTS[event]:
            target = args[FILE_EVENTS[event]]
            moved = event in ("os.rename", "shutil.move") and len_(args) > 1 and touches(args[1])
            return f"{event} on {path_of(target)}" if touches(target) or moved else None
        if event == "object.__setattr__" and len_(args) >= 2 and guarded_object(args[0]):
            return f"set {args[1]!s:.100} on a {'class' if isinstance_(args[0], type_) else 'object'} of pypto, " \
                   "torch or the harness"
        if event in ("compile", "code.__new__") and len_(args) >= 2 and isinstance_(args[1], str_) \
                and not submitted(args[1]) \
                and not getframe(2).f_code.co_filename.startswith("<frozen importlib"):
            return f"made code under the file name {args[1]} of the harness or a library it trusts"
        if event == "function.__new__" and args and hasattr(args[0], "co_filename") \
                and not submitted(args[0].co_filename):
            return f"made a function of its own from code of {args[0].co_filename}"
        return None

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if state["busy"] or state["sent"] >= MAX_REPORTS:
            return
        state["busy"] = True
        try:
            found = what(event, args)
            if found is not None:
                where = culprit()
                if where is not None:
                    state["sent"] += 1
                    emit("tamper", {"what": found[:500], "file": where[0][-300:], "line": where[1]})
        except Exception:  # noqa: BLE001 - never break the job's own call; a failure here is not evidence
            pass
        finally:
            state["busy"] = False

    sys.addaudithook(hook)
