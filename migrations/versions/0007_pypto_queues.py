"""Queues per pypto version: jobs.queue holds "<mode>@<pypto version>" (docs/versions.md §3)

Revision ID: 0007_pypto_queues
Revises: 0006_hardening
"""
from alembic import op
import sqlalchemy as sa

revision = '0007_pypto_queues'
down_revision = '0006_hardening'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.alter_column('queue', existing_type=sa.String(length=16), type_=sa.String(length=64),
                              existing_nullable=False)


def downgrade() -> None:
    # A versioned queue name does not fit the old width: such jobs keep only their mode.
    op.execute("UPDATE jobs SET queue = mode WHERE length(queue) > 16")
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.alter_column('queue', existing_type=sa.String(length=64), type_=sa.String(length=16),
                              existing_nullable=False)
