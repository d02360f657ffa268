"""No import circles between modules anywhere in the project (docs/architecture.md).

A circle hides which module is the lower one, and a function-level import only hides the circle
from Python, not from the reader: lazy imports count here too (grimp reads every import statement).
"""
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("runtime", "client", "jobqueue", "worker", "server", "web")


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_circle_finder_finds_a_circle(tmp_path, monkeypatch):
    pkg = tmp_path / "circled"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from circled import b\n")
    (pkg / "b.py").write_text("def f():\n    from circled import a\n")  # a lazy import still closes it
    (pkg / "c.py").write_text("from circled import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles(grimp.build_graph("circled", cache_dir=None)) == [["circled.a", "circled.b"]]


def test_no_import_circles_in_the_project(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))
    for name in [m for m in sys.modules if m.split(".")[0] in PACKAGES]:
        monkeypatch.delitem(sys.modules, name)  # grimp finds the packages on sys.path: this checkout's
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert circles(graph) == []
