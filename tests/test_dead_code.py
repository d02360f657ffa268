"""No code that nothing uses: vulture, configured in pyproject.toml ([tool.vulture])."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_no_dead_code():
    result = subprocess.run([sys.executable, "-m", "vulture"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, ("vulture found unused code; delete it, or list it with the reason it is alive "
                                    "in tests/dead_code_whitelist.py:\n" + result.stdout[-4000:] + result.stderr[-2000:])
