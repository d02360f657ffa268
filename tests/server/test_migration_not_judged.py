"""Migration 0018: cases stored as structural_error for a not_run that was not the kernel's read not_judged, and
their operators' rows follow (server/services/results.py recombine_not_judged)."""
from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from server import migrate
from tests.web import realops_seed
from tests.web.conftest import make_app, make_settings


def test_old_structural_errors_of_skipped_cases_read_not_judged(tmp_path: Path):
    settings = make_settings(tmp_path)
    url = settings.resolved_database_url
    migrate.upgrade(url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        realops_seed.add(session, app.state.blobs, settings)
        session.commit()
    app.state.engine.dispose()
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # as 0017 and older code stored them
        judged = conn.execute(sa.text("SELECT count(*) FROM case_states WHERE combined_verdict = 'not_judged'")).scalar()
        conn.execute(sa.text("UPDATE case_states SET combined_verdict = 'structural_error' "
                             "WHERE combined_verdict = 'not_judged'"))
        conn.execute(sa.text("UPDATE operators SET combined_verdict = 'structural_error' "
                             "WHERE combined_verdict = 'not_judged'"))
    assert judged, "the seed has cases that were not run for reasons not the kernel's"
    migrate.downgrade(url, "0017_operator_outcome")
    migrate.upgrade(url)
    with engine.connect() as conn:
        after = conn.execute(sa.text("SELECT count(*) FROM case_states WHERE combined_verdict = 'not_judged'")).scalar()
        ops = dict(conn.execute(sa.text("SELECT name, combined_verdict FROM operators")).all())
    engine.dispose()
    assert after == judged
    assert ops["mla_prolog"] == "not_judged", ops
