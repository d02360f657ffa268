"""Discovery's work grows with the operators, not with their square (issue 23), and the shared name index
resolves every import exactly as probing every import root in order does."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runtime.intake import discover as discover_mod
from runtime.intake import imports

KERNEL = "import pypto\nimport numpy as np\nfrom . import helpers\n\ndef {op}_wrapper(x):\n    return x\n"
TEST = ("import json, os, sys\nfrom pathlib import Path\nimport torch\nimport torch_npu\n"
        "sys.path.insert(0, str(Path(__file__).parents[3] / 'src'))\n"
        "from gym.ops.{model}.{op}.{op}_impl import {op}_wrapper\n\n"
        "def test_level0():\n    assert {op}_wrapper(1) == 1\n")
GOLDEN = "import torch\nimport json\n\ndef {op}_golden(x):\n    return x\n"


def make_checkout(root: Path, operators: int) -> None:
    """pypto-gym's layout: tests/ops/<model>/<Op>/ beside src/gym/ops/<model>/<op>/<op>_impl.py, half test
    modules and half gym packages (test_cases.json and a golden)."""
    (root / "src" / "gym" / "ops").mkdir(parents=True)
    (root / "src" / "gym" / "__init__.py").write_text("")
    for i in range(operators):
        model, op = f"model{i % 3}", f"op_{i}"
        kernel, test = root / "src" / "gym" / "ops" / model / op, root / "tests" / "ops" / model / f"Op{i}"
        kernel.mkdir(parents=True)
        test.mkdir(parents=True)
        (kernel / "__init__.py").write_text("")
        (kernel / "helpers.py").write_text("import math\n")
        (kernel / f"{op}_impl.py").write_text(KERNEL.format(op=op))
        cases = {"op_name": op, "test_cases": [{"id": "level0", "inputs": [{"name": "x", "shape": [4, 8]}]}]}
        (test / "test_cases.json").write_text(json.dumps(cases))
        if i % 2:
            (test / f"test_{op}.py").write_text(TEST.format(op=op, model=model))
        else:
            (test / f"{op}_golden.py").write_text(GOLDEN.format(op=op))


def counted(monkeypatch, tmp_path: Path, operators: int) -> tuple[int, int]:
    """(folders read, import probes) of one discover() of an `operators`-operator checkout: the real
    functions, wrapped to count their calls."""
    root = tmp_path / f"gym{operators}"
    make_checkout(root, operators)
    calls = {"scandir": 0, "probe": 0}

    def wrap(fn, name):
        def counting(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return counting

    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", wrap(os.scandir, "scandir"))
        patch.setattr(imports, "_resolve_under", wrap(imports._resolve_under, "probe"))
        found = discover_mod.discover(root)
    assert len(found) == operators and {op.route for op in found} == {"module", "package"}
    assert all(f"src/gym/ops/{op.folder.split('/')[2]}/{op.name}/helpers.py" in op.files for op in found)
    return calls["scandir"], calls["probe"]


def test_discovery_work_grows_linearly_with_the_operators(monkeypatch, tmp_path):
    """Each operator once walked all of src/ again and probed every folder of it for torch, json, numpy: twice
    the operators cost four times the work. Now one walk and one name index serve them all."""
    small, large = counted(monkeypatch, tmp_path, 12), counted(monkeypatch, tmp_path, 24)
    assert large[0] <= 2 * small[0] + 4, f"folders read: {small[0]} for 12 operators, {large[0]} for 24"
    assert large[1] <= 2 * small[1] + 4, f"import probes: {small[1]} for 12 operators, {large[1]} for 24"


@pytest.fixture
def tricky(tmp_path: Path) -> Path:
    """Names that resolve in more than one place, a namespace folder, a module too deep to be a root."""
    files = {
        "src/a/util.py": "",
        "src/b/util/__init__.py": "",
        "src/b/util/extra.py": "",
        "src/b/Shout.py": "",
        "src/ns/only_here/__init__.py": "",
        "src/c/ns/mod.py": "",
        "src/d1/d2/d3/d4/d5/d6/d7/d8/deep.py": "",
        "src/d1/d2/d3/d4/d5/d6/d7/d8/d9/deeper.py": "",
        "src/pkg/__init__.py": "import util\n",
        "src/pkg/core.py": "from util import extra\nimport ns.mod\n",
        "top_level.py": "",
        "tests/t/test_x.py": ("import torch, json, util, pkg.core, shout, deep, deeper, top_level, ns.only_here\n"
                              "import importlib\nimportlib.import_module('c.ns.mod')\nfrom util import extra\n"),
        "tests/t/util.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def every_root(root: Path, first: list[Path]) -> list[Path]:
    """The import roots as each operator walked them before the index: `first`, src/ and each folder below, root."""
    roots = list(first)
    for here, dirs, _ in os.walk(root / "src"):
        dirs[:] = sorted(d for d in dirs if d not in imports.SKIP_DIRS and not d.startswith("."))
        if len(Path(here).relative_to(root / "src").parts) >= imports.MAX_ROOT_DEPTH:
            dirs[:] = []
        roots.append(Path(here))
    return list(dict.fromkeys([*roots, root]))


@pytest.mark.parametrize("first", [["tests/t"], [], ["src/b"], ["src/b", "tests/t"], ["."]])
def test_the_name_index_resolves_as_probing_every_root_in_order(tricky, first):
    roots_first = [tricky / f for f in first]
    entries = [tricky / "tests/t/test_x.py", tricky / "src/pkg/core.py"]
    every, indexed = set(), set()
    plain = imports.closure(tricky, entries, every_root(tricky, roots_first), every)
    shared = imports.closure(tricky, entries, imports.SrcIndex(tricky).roots(roots_first), indexed)
    assert shared == plain and indexed == every
    assert imports.import_roots(tricky, roots_first) == every_root(tricky, roots_first)
    assert "src/d1/d2/d3/d4/d5/d6/d7/d8/deep.py" in plain and not any(f.endswith("deeper.py") for f in plain)
