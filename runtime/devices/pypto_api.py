"""The installed pypto's public API, by introspection: what the lint checks a kernel's pypto names against.

Importing pypto takes seconds, so the introspection runs once per pypto install in a subprocess
(`python -m runtime.devices.pypto_api`) and is cached as JSON under the cache dir, keyed by the version and
the package's location and timestamp (a pypto rebuilt from source in place gets a new key).
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata, util
from pathlib import Path
from typing import Any

INTROSPECT_TIMEOUT_S = 120.0
FORMAT = 2  # bump when the introspection changes: the cache key includes it
# The pypto this project pins (pyproject.toml) and measured (docs/pypto.md): jobs that ask for no version
# run on it (docs/versions.md §3).
REFERENCE_PYPTO = "0.2.0"
# A version as pip writes it (PEP 440 and local labels, e.g. 0.3.0.dev20260101+gabc123): no spaces, no "/".
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+!_-]{0,47}")


def check_version(text: str, where: str) -> str:
    """`text` stripped when it reads as a pypto version; ValueError naming `where` otherwise."""
    value = text.strip() if isinstance(text, str) else ""
    if not _VERSION.fullmatch(value):
        raise ValueError(f"{where}: {text!r} is not a pypto version (e.g. 0.2.0 or 0.3.0.dev0+gabc123)")
    return value


def version_argument(text: str) -> str:
    """argparse `type=` for a --pypto VERSION option: the version, or the parser's own error."""
    import argparse

    try:
        return check_version(text, "--pypto")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclass(frozen=True)
class PyptoApi:
    """Public names per pypto module and class, and the signatures of pypto's Python functions."""

    version: str
    modules: dict[str, frozenset[str]] = field(default_factory=dict)  # "pypto.frontend" -> names
    classes: dict[str, frozenset[str]] = field(default_factory=dict)  # "pypto.DataType" -> attributes
    signatures: dict[str, dict[str, Any]] = field(default_factory=dict)  # "pypto.div" -> {params, varargs, varkw}
    submodules: frozenset[str] = frozenset()  # every module on disk, loaded by `import pypto` or not

    def kind(self, name: str) -> str | None:
        """"module", "class", "function" or "other" for a name this pypto has, None when it has none."""
        if name in self.modules:
            return "module"
        if name in self.classes:
            return "class"
        parent, _, leaf = name.rpartition(".")
        owner = self.modules.get(parent) or self.classes.get(parent)
        if owner is None or leaf not in owner:
            return None
        return "function" if name in self.signatures else "other"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PyptoApi:
        return cls(version=str(data["version"]),
                   modules={k: frozenset(v) for k, v in data["modules"].items()},
                   classes={k: frozenset(v) for k, v in data["classes"].items()},
                   signatures=dict(data["signatures"]), submodules=frozenset(data["submodules"]))


def installed_version() -> str | None:
    """The installed pypto's version, without importing it; None when pypto is not installed."""
    try:
        return metadata.version("pypto")
    except metadata.PackageNotFoundError:
        return None


def _install_key(version: str) -> str:
    spec = util.find_spec("pypto")
    origin = spec.origin if spec and spec.origin else ""
    stamp = os.stat(origin).st_mtime_ns if origin and os.path.exists(origin) else 0
    digest = hashlib.sha256(f"{FORMAT}\0{version}\0{origin}\0{stamp}".encode()).hexdigest()[:12]
    return f"{version}-{digest}".replace("+", "-").replace("/", "-")


def load(cache_dir: Path | None) -> PyptoApi | None:
    """This host's pypto API (from the cache, else introspected now and cached); None without pypto
    or when the introspection fails (the lint then skips its version checks)."""
    version = installed_version()
    if version is None:
        return None
    return _load(version, str(cache_dir) if cache_dir else None)


@lru_cache(maxsize=4)
def _load(version: str, cache_dir: str | None) -> PyptoApi | None:
    path = Path(cache_dir) / "pypto-api" / f"{_install_key(version)}.json" if cache_dir else None
    if path is not None and path.is_file():
        try:
            return PyptoApi.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError):
            pass
    try:
        out = subprocess.run([sys.executable, "-m", "runtime.devices.pypto_api"], capture_output=True, text=True,
                             timeout=INTROSPECT_TIMEOUT_S, check=True,
                             env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}).stdout
        data = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
                tmp.write(json.dumps(data))
            os.replace(tmp.name, path)  # atomic: concurrent runs see all or nothing
        except OSError:
            pass
    return PyptoApi.from_json(data)


def introspect() -> dict[str, Any]:
    """Import pypto and list its public surface (run in a subprocess by `load`)."""
    import pypto

    version = installed_version() or "unknown"
    modules: dict[str, list[str]] = {}
    classes: dict[str, list[str]] = {}
    signatures: dict[str, dict[str, Any]] = {}
    for mod_name, mod in sorted(sys.modules.items()):
        if mod is None or not (mod_name == "pypto" or mod_name.startswith("pypto.")):
            continue
        if any(part.startswith("_") for part in mod_name.split(".")):
            continue
        parent, _, leaf = mod_name.rpartition(".")
        if parent and getattr(sys.modules.get(parent), leaf, None) is not mod:
            continue  # shadowed: `pypto.platform` is an object, not the module of that name
        names = sorted(n for n in dir(mod) if not n.startswith("_"))
        modules[mod_name] = names
        for name in names:
            value = getattr(mod, name, None)
            qual = f"{mod_name}.{name}"
            if inspect.isclass(value):
                classes[qual] = sorted(n for n in dir(value) if not n.startswith("_"))
            elif callable(value):
                sig = _signature(value)
                if sig is not None:
                    signatures[qual] = sig
    on_disk = sorted(_modules_on_disk(Path(pypto.__path__[0])))
    return {"version": version, "modules": modules, "classes": classes, "signatures": signatures,
            "submodules": on_disk}


def _modules_on_disk(root: Path) -> set[str]:
    """Dotted names of the package's modules and subpackages, found on disk without importing them."""
    found = {"pypto"}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts:
            continue
        if path.is_dir() and (path / "__init__.py").is_file():
            found.add(".".join(("pypto", *rel.parts)))
        elif path.suffix in (".py", ".so") and path.stem != "__init__":
            found.add(".".join(("pypto", *rel.parent.parts, path.name.split(".")[0])))
    return found


def _signature(fn: Any) -> dict[str, Any] | None:
    """Parameters of a Python function (pybind functions have no inspectable signature: None)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        annotation = "" if p.annotation is p.empty else inspect.formatannotation(p.annotation)
        params.append({"name": p.name, "kind": p.kind.name, "annotation": annotation,
                       "required": p.default is p.empty})
    kinds = {p.kind for p in sig.parameters.values()}
    return {"params": params, "varargs": inspect.Parameter.VAR_POSITIONAL in kinds,
            "varkw": inspect.Parameter.VAR_KEYWORD in kinds}


if __name__ == "__main__":
    json.dump(introspect(), sys.stdout)
