"""A test module run the way pytest runs it, inside the job (docs/realops.md §4).

`collect` asks pytest for the module's items (parametrisation, markers and the checkout's conftest hooks
included) and emits them as one `pytest_items` event: each item is a case. `run_item` runs one item: pytest
collects the module again, keeps that item alone, and resolves its fixtures through the `conftest.py` files
between the module and the checkout root. Fixtures the checkout does not define come from this module
(`device`, `device_id`, `run_mode`, `case`: what the harness gave test functions before). Whatever ended the
item is raised again here, so the job reports it as it reports a script's exception.
"""
from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from runtime.devices import device as device_mod
from runtime.fence.events import Events
from runtime.intake.testmodule import CASE_FILE, CannotCall, TestFailed, item_case

# The checkout's pytest config, when the bundle holds one at its root (runtime/intake/testmodule.py packs it).
CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_given: dict[str, Any] = {"mode": "sim", "device": "cpu"}


class FixtureNeedsNpu(RuntimeError):
    """A fixture of the test asked the SIM stand-in for what only an NPU has: the environment's gap."""


class ItemSkipped(Exception):
    """pytest skipped the item when it ran (a `skipif` that held, `pytest.skip()` in a fixture or the test)."""


class PytestStopped(RuntimeError):
    """The checkout's conftest stopped pytest (`pytest.exit`) before the item ran."""


@pytest.fixture
def device() -> str:
    """The card the job runs on: `npu:0` under the SIM stand-in, the CPU without it, the card on an NPU."""
    return str(_given["device"])


@pytest.fixture
def device_id() -> int:
    """The card's index, as the gym's `main()` passes `int(TILE_FWK_DEVICE_ID)`."""
    index = str(_given["device"]).rpartition(":")[2]
    return int(index) if index.isdigit() else 0


@pytest.fixture
def run_mode() -> str:
    return str(_given["mode"])


@pytest.fixture
def case(request: pytest.FixtureRequest) -> Any:
    """The test_cases.json entry beside the module whose id is the function's name without `test_`, else the first."""
    try:
        cases = json.loads((Path(request.node.path).parent / CASE_FILE).read_text(encoding="utf-8"))["test_cases"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    wanted = getattr(request.node, "originalname", request.node.name).removeprefix("test_")
    return next((c for c in cases if isinstance(c, dict) and str(c.get("id")) == wanted), cases[0] if cases else None)


class _Watch:
    """The hooks that pick the item and keep what ended it."""

    def __init__(self, wanted: str | None, force: bool):
        self.wanted, self.force = wanted, force
        self.items: list[pytest.Item] = []
        self.found = False
        self.errors: list[BaseException] = []  # collection errors, in order
        self.outcome: dict[str, Any] = {}  # phase -> (outcome, exception or None)
        self.fixture: tuple[str, str, BaseException] | None = None  # the first fixture that raised
        self.stopped: str = ""
        self.skipped: str = ""  # why pytest skipped the whole module, when it did

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> Iterator[None]:
        yield  # after the checkout's own hooks (their filters and order are pytest's answer)
        if self.wanted is None:
            return None
        keep = [i for i in items if item_case(i.nodeid) == self.wanted]
        self.found = bool(keep)
        if self.force:  # named with --case: a skip mark does not stop it
            for node in keep[0].listchain() if keep else []:
                node.own_markers[:] = [m for m in node.own_markers if m.name not in ("skip", "skipif")]
        items[:] = keep
        return None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        call = getattr(report, "call", None)
        if report.failed and call is not None and call.excinfo is not None:
            self.errors.append(call.excinfo.value)
        if report.skipped:  # `pytest.skip(..., allow_module_level=True)`, `importorskip`
            self.skipped = f"pytest skipped the module: {_reason(report)}"

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Iterator[Any]:
        try:
            return (yield)
        except BaseException as exc:
            if self.fixture is None and not isinstance(exc, pytest.skip.Exception):
                where = inspect.getsourcefile(fixturedef.func) or ""
                self.fixture = (fixturedef.argname, where, exc)
            raise

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        report = yield
        exc = call.excinfo.value if call.excinfo is not None else None
        self.outcome.setdefault(call.when, (report.outcome, exc, report))
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: Any) -> bool | None:
        """As pytest's own call, and a function returning False failed (the gym's `main()` counts it so)."""
        function = pyfuncitem.obj
        if inspect.iscoroutinefunction(function):
            return None  # pytest's own call refuses it
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        if function(**args) is False:
            raise TestFailed(f"{pyfuncitem.name} returned False")
        return True

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        if isinstance(excinfo.value, pytest.exit.Exception):
            self.stopped = str(excinfo.value.msg)


def _args(script: Path, root: Path) -> list[str]:
    config = next((root / n for n in CONFIG_FILES if (root / n).is_file()), None)
    # Our own flags only: `addopts` may name plugins the job lacks (xdist's -n); `-s` leaves stdout and stderr
    # to the job (markers are read there); logging as in a plain run (pytest's handlers would swallow
    # `logging.basicConfig`); no cache written into the checkout.
    return [str(script), f"--rootdir={root}", f"--confcutdir={root}", "-c", str(config or os.devnull),
            "-o", "addopts=", "-s", "-q", "--tb=short", "-p", "no:cacheprovider", "-p", "no:logging"]


def _pytest(script: Path, root: Path, watch: _Watch, extra: list[str]) -> int:
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the host's plugins are not the checkout's
    os.environ.pop("PYTEST_ADDOPTS", None)
    import runtime.job.pytest_run as fixtures  # this module's fixtures, for whatever the checkout does not define
    return int(pytest.main([*_args(script, root), *extra], plugins=[watch, fixtures]))


def prepare(req: dict[str, Any]) -> None:
    """The card a test finds, as pytest on an NPU host gives it: `TILE_FWK_DEVICE_ID` (the gym's
    `int(os.environ["TILE_FWK_DEVICE_ID"])`; 0 under the SIM stand-in, NPU jobs have it already:
    runtime/fence/jobenv.py) and the `device` fixture: the card on an NPU, in SIM `npu:0` under the stand-in,
    else the CPU (docs/realops.md §10). `run_mode` is the mode the script is told (the emulated NPU branch's)."""
    if req.get("standin_offered"):
        os.environ.setdefault("TILE_FWK_DEVICE_ID", "0")
    card = device_mod.current().name if req["mode"] == "npu" else "npu:0" if req.get("standin_offered") else "cpu"
    _given.update(mode=req.get("script_mode") or req["mode"], device=card)


def collect(script: Path, root: Path, events: Events) -> None:
    """Emit the module's items (`pytest_items`): each id, and the reason of a skip mark that holds, or None."""
    watch = _Watch(None, False)
    code = _pytest(script, root, watch, ["--collect-only"])
    failed = watch.errors[0] if watch.errors else None
    if failed is not None or watch.stopped or (code not in (0, 5) and not watch.items):
        why = f"{type(failed).__name__}: {failed}" if failed else watch.stopped or f"pytest exit {code}"
        events.emit("pytest_items", items=None, error=why[:2000])
        return
    events.emit("pytest_items", items=[{"id": item_case(i.nodeid), "skip": _skip_reason(i)} for i in watch.items],
                left_out=watch.skipped or None)


def _skip_reason(item: pytest.Item) -> str | None:
    from _pytest.skipping import evaluate_skip_marks  # pytest's own reading of skip and skipif marks
    try:
        skipped = evaluate_skip_marks(item)
    except BaseException:  # noqa: BLE001 - a condition that raises: the run will say so
        return None
    return None if skipped is None else skipped.reason


def run_item(script: Path, root: Path, wanted: str, force: bool = False) -> None:
    """Run one item; raise what ended it (nothing when it passed)."""
    watch = _Watch(wanted, force)
    _pytest(script, root, watch, [])
    if watch.errors:
        raise watch.errors[0]
    if watch.stopped:
        raise PytestStopped(f"the checkout's conftest stopped pytest before {wanted} ran: {watch.stopped}")
    if not watch.found and watch.skipped:
        raise ItemSkipped(watch.skipped)
    if not watch.found:
        raise CannotCall(f"pytest collected no item {wanted!r} from {script.name} (the checkout's conftest hooks "
                         "may filter it out)")
    for phase in ("setup", "call", "teardown"):
        outcome, exc, report = watch.outcome.get(phase, ("passed", None, None))
        if hasattr(report, "wasxfail"):
            continue  # an expected failure (`xfail`), as pytest counts it
        if outcome == "skipped":
            raise ItemSkipped(_reason(report))
        if exc is not None and not isinstance(exc, pytest.skip.Exception):
            raise _setup_error(watch, exc) if phase == "setup" else exc


def _reason(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    return str(longrepr[2]).removeprefix("Skipped: ") if isinstance(longrepr, tuple) else str(longrepr or "")


def _setup_error(watch: _Watch, exc: BaseException) -> BaseException:
    """A fixture nobody defines is unusable input; one that needs an NPU is the environment's gap."""
    if type(exc).__name__ == "FixtureLookupError":
        name = getattr(exc, "argname", "") or "?"
        return CannotCall(f"needs the fixture {name!r}, which no conftest.py between the module and the checkout "
                          "root defines (crosscheck supplies device, device_id, run_mode and case)")
    if watch.fixture is not None and watch.fixture[2] is exc and _needs_npu(exc):
        name, where, _ = watch.fixture
        shown = Path(where).name if where else "?"
        return FixtureNeedsNpu(f"the fixture {name!r} ({shown}) needs what only an NPU has: {exc}")
    return exc


def _needs_npu(exc: BaseException) -> bool:
    """The SIM stand-in's refusals (runtime/devices/standin): NeedsRealNpu, or a name it says an NPU has."""
    return any(t.__name__ in ("NeedsRealNpu", "NpuKernelMissing") for t in type(exc).__mro__) \
        or (isinstance(exc, AttributeError) and "needs a real NPU" in str(exc))
