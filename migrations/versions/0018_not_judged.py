"""Cases stored as structural_error for a not_run that was not the kernel's (skipped, an argument crosscheck
cannot supply, an NPU-only reference, ...) read not_judged, as new results do (server/services/combined.py)

Revision ID: 0018_not_judged
Revises: 0017_operator_outcome
"""
from alembic import op

revision = '0018_not_judged'
down_revision = '0017_operator_outcome'
branch_labels = None
depends_on = None


def upgrade() -> None:
    from server.services import results

    results.recombine_not_judged(op.get_bind())


def downgrade() -> None:
    pass  # structural_error was the wrong word for these cases; nothing to restore
