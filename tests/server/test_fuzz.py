"""Fuzzing: schemathesis against our OpenAPI spec, anonymous and with an admin token.

Every operation gets generated requests (valid and invalid); no answer may be a 5xx, and every
answer whose status the spec documents must match its schema. Bounded by max_examples so that
the whole module stays in CI's budget.

The requests come from schemathesis's Python API (each operation's Hypothesis strategy, driven by
`hypothesis.given` here), not from its pytest plugin: the plugin rewrites pytest's internal node
ids and broke with a pytest release (docs/dependencies.md).
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from server import migrate
from server.config import Settings
from server.main import create_app
from server.services import tokens
from tests.server.conftest import package_files
from tests.web.conftest import make_settings

MAX_EXAMPLES = 8
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
FUZZ = settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, str]]]:
    """A migrated SQLite app with one submission in it (so ids 1 exist), anonymous read off."""
    settings: Settings = make_settings(Path(tmp_path_factory.mktemp("fuzz")), max_upload_bytes=256 * 1024)
    migrate.upgrade(settings.resolved_database_url)
    app = create_app(settings, start_sweeper=False)
    from server.services import submissions

    with app.state.sessionmaker.begin() as session:
        admin = tokens.create(session, "fuzz-admin", ["admin"])[1]
        new = submissions.NewSubmission(filename="scale_add.zip", operator="scale_add",
                                        data=submissions.bundle_from_files(package_files("scale_add")))
        submissions.create(session, app.state.blobs, settings, new)
    yield app, {"anonymous": "", "admin": admin}
    app.state.engine.dispose()


@pytest.fixture(scope="module")
def api_schema(fuzz_app: tuple[Any, dict[str, str]]) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", fuzz_app[0])


def fuzz_operation(operation: Any, secret: str) -> None:
    """Valid and invalid requests to one operation, each answer checked against the spec."""
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    requests = st.one_of([operation.as_strategy(generation_mode=mode) for mode in GenerationMode])

    @given(case=requests)
    @FUZZ
    def call(case: Any) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    call()


@pytest.mark.parametrize("who", ["anonymous", "admin"])
def test_every_operation_answers_by_its_spec(api_schema: Any, fuzz_app: tuple[Any, dict[str, str]],
                                             who: str) -> None:
    failures, fuzzed = [], []
    for result in api_schema.get_all_operations():
        operation = result.ok()  # an operation the spec itself gets wrong raises here
        fuzzed.append(operation.label)
        try:
            fuzz_operation(operation, fuzz_app[1][who])
        except Exception as exc:  # noqa: BLE001 (every operation is fuzzed; all failures are reported)
            failures.append(f"{operation.label}: {exc}")
    spec = fuzz_app[0].openapi()["paths"]
    listed = [f"{m.upper()} {path}" for path, item in spec.items() for m in item if m != "parameters"]
    assert sorted(fuzzed) == sorted(listed), "schemathesis did not fuzz every operation the spec lists"
    assert not failures, "\n\n".join(failures)
