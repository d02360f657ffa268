"""Fuzzing: schemathesis against our OpenAPI spec, anonymous and with an admin token.

Every operation gets generated requests (valid and invalid); no answer may be a 5xx, and every
answer whose status the spec documents must match its schema. Bounded by max_examples so that
the whole module stays in CI's budget.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
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


schema = schemathesis.pytest.from_fixture("api_schema")


def _call(case: Any, secret: str) -> None:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    case.call_and_validate(headers=headers, checks=CHECKS)


FUZZ = settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@schema.parametrize()
@FUZZ
def test_anonymous_requests(case: Any, fuzz_app: tuple[Any, dict[str, str]]) -> None:
    _call(case, "")


@schema.parametrize()
@FUZZ
def test_admin_requests(case: Any, fuzz_app: tuple[Any, dict[str, str]]) -> None:
    _call(case, fuzz_app[1]["admin"])
