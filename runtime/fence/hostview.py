"""What a job may see of the host and what it must not write, learned once when the warm parent starts.

Two facts, each found from what things are rather than from `sys.path` or the working directory
(docs/SECURITY.md, "The job's view of the host"):
- the code a job runs: the interpreter, its standard library and site dirs (with their `.pth`
  import roots), `PYTHONPATH`, and the folder of every package the warm parent imported, however
  its finder found it (an editable install's sources are not on `sys.path`);
- the places anyone may write: every world-writable dir, file or socket reachable by others, found
  by walking each filesystem of the mount table (pseudo filesystems skipped, closed dirs pruned).

`learn()` runs in the warm parent before its job leaders fork, so every leader inherits the answer.
"""
from __future__ import annotations

import json
import os
import site
import stat
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

# Filesystems with nothing a job could store data in (or with their own namespace: mqueue).
PSEUDO_FS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs", "pstore",
    "bpf", "configfs", "fusectl", "hugetlbfs", "autofs", "binfmt_misc", "nsfs", "efivarfs", "rpc_pipefs",
    "selinuxfs", "model_tools_unavailable",
})
# System dirs a job needs whole (compilers, shared libraries, devices): never narrowed to a few children.
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/dev", "/proc",
               "/sys", "/run", "/var", "/boot", "/snap")


@dataclass
class Writable:
    """World-writable places of the host, outermost only (what lies inside a covered dir is covered)."""
    dirs: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # regular files: made read-only in the job
    sockets: list[Path] = field(default_factory=list)  # sockets and FIFOs: covered with /dev/null


@dataclass
class HostView:
    code: list[Path]
    writable: Writable
    starting_dir: Path | None  # the directory the harness was started from: never in a job's view


_learned: HostView | None = None


def start_scan() -> int:
    """Scan for writable places in a forked process while the caller imports torch and pypto.

    Returns the read end of a pipe for `learn()`. Call before any thread is started.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            found = scan_writable()
            data = json.dumps({k: [str(p) for p in v] for k, v in vars(found).items()}).encode()
            while data:
                data = data[os.write(w, data):]
        except BaseException:  # noqa: BLE001 - the reader sees no answer and scans itself
            code = 1
        os._exit(code)
    os.close(w)
    _scanners[r] = pid
    return r


_scanners: dict[int, int] = {}


def learn(scan_fd: int | None = None) -> HostView:
    """The host's view, learned once per process (the warm parent, after its imports); forks reuse it."""
    global _learned
    if _learned is None:
        _learned = HostView(code_paths(), _scanned(scan_fd), _cwd())
    return _learned


def learned() -> bool:
    """Whether this process has learned the view (the warm parent must, before it forks a job leader)."""
    return _learned is not None


def _scanned(fd: int | None) -> Writable:
    if fd is None:
        return scan_writable()
    with os.fdopen(fd, "rb") as pipe:
        raw = pipe.read()
    os.waitpid(_scanners.pop(fd), 0)
    try:
        return Writable(**{k: [Path(p) for p in v] for k, v in json.loads(raw).items()})
    except (ValueError, TypeError):
        return scan_writable()


def _cwd() -> Path | None:
    try:
        return Path(os.getcwd()).resolve()
    except OSError:
        return None


def code_paths() -> list[Path]:
    """Every folder the job's Python may import from, by what it is (outermost only)."""
    found: set[str] = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.update(v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib"))
    sites = list(site.getsitepackages())
    found.update(sites)
    found.update(_imported_package_dirs())
    # Import roots an operator configures: one naming the starting dir (PYTHONPATH=.) or a folder
    # holding it is not taken as code, or the whole starting dir would be in every job's view.
    configured = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for folder in sites:
        configured.extend(_pth_roots(Path(folder)))
    cwd = _cwd()
    for entry in configured:
        if os.path.isdir(entry) and (cwd is None or not cwd.is_relative_to(Path(entry).resolve())):
            found.add(entry)
    return _outermost({Path(p).resolve() for p in found if p and os.path.isdir(p)})


def _pth_roots(folder: Path) -> list[str]:
    """Folders that `.pth` files of a site dir add to the import path (old-style editable installs)."""
    roots = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))
    except OSError:
        return roots
    for name in names:
        try:
            lines = (folder / name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if line and not line.startswith(("#", "import ", "import\t")):
                roots.append(str(folder / line))
    return roots


def _imported_package_dirs() -> list[str]:
    """The folders of the top-level packages this process imported (torch, pypto, our runtime ...).

    An editable install's finder maps a package to its source tree outside every sys.path entry;
    the package's own `__path__` says where it is, however it was found.
    """
    dirs = []
    for name, module in list(sys.modules.items()):
        if "." in name or module is None:
            continue
        dirs.extend(str(p) for p in (getattr(module, "__path__", None) or []) if isinstance(p, str))
    return dirs


def narrowable(folder: Path) -> bool:
    """Whether `folder` may be replaced by a tmpfs holding only what a job needs: never / or a system dir."""
    return folder != Path("/") and not any(Path(s).is_relative_to(folder) for s in SYSTEM_DIRS)


def _mounts() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount this process sees, from /proc/self/mountinfo."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        fstype = line.split(" - ", 1)[1].split()[0]
        found.append((fields[4].encode().decode("unicode_escape"), fstype))
    return found


def scan_writable() -> Writable:
    """Walk every real filesystem of the mount table for places others may write.

    A dir others cannot traverse is not entered (a job cannot reach below it), a world-writable dir
    is recorded and not entered (it is covered whole), device files are skipped (writing them is
    their use). About 2 s for 180,000 entries on this host (docs/SECURITY.md).
    """
    out = Writable()
    seen_dirs: set[Path] = set()
    for point, fstype in _mounts():
        if fstype in PSEUDO_FS:
            continue
        root = Path(point)
        try:
            st = os.lstat(root)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o002:
            seen_dirs.add(root)
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o001:
            _walk(root, st.st_dev, out, seen_dirs)
    out.dirs = _outermost(seen_dirs)
    out.files = [f for f in sorted(set(out.files)) if not any(f.is_relative_to(d) for d in out.dirs)]
    out.sockets = [s for s in sorted(set(out.sockets)) if not any(s.is_relative_to(d) for d in out.dirs)]
    return out


def _walk(root: Path, dev: int, out: Writable, dirs: set[Path]) -> None:
    todo = [str(root)]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                if mode & 0o002:
                    dirs.add(Path(entry.path))
                elif mode & 0o001 and st.st_dev == dev:
                    todo.append(entry.path)
            elif mode & 0o002:
                if stat.S_ISREG(mode):
                    out.files.append(Path(entry.path))
                elif stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
                    out.sockets.append(Path(entry.path))


def _outermost(paths: set[Path]) -> list[Path]:
    kept: list[Path] = []
    for path in sorted(paths, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return sorted(kept)
