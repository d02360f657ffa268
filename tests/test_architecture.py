"""The import direction of the architecture, checked by import-linter (.importlinter)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run([exe, str(REPO / ".importlinter")], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_importing_the_app_builds_nothing(tmp_path):
    """server.main is a factory: importing it opens no database, broker or data folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_DIR", "DATABASE_URL", "BROKER_URL", "BLOB_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    code = "import server.main as m; assert not hasattr(m, 'app'); assert callable(m.create_app)"
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []  # no crosscheck-data/ with a database or broker in it


PACKAGES = ("runtime", "client", "jobqueue", "worker", "server", "web", "migrations")
MAX_MODULE_LINES = 450  # a module past this is split (docs/architecture.md)
MAX_RUNTIME_TOP_MODULES = 12  # the rest of the runtime lives in its rooms by stage


def test_no_module_outgrows_its_room():
    long = {str(p.relative_to(REPO)): n for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_the_runtime_keeps_its_modules_in_rooms():
    top = sorted(p.name for p in (REPO / "runtime").glob("*.py"))
    assert len(top) <= MAX_RUNTIME_TOP_MODULES, top
