"""The job outbox (docs/platform.md §3): which attempt of a waiting job the broker has accepted a message for

Revision ID: 0014_job_outbox
Revises: 0013_depth_indexes
"""
import sqlalchemy as sa
from alembic import op

revision = '0014_job_outbox'
down_revision = '0013_depth_indexes'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('dispatched_attempt', sa.Integer(), nullable=True))
    # Jobs waiting when this runs were sent the old way: the relay sends them once more (a claim is
    # attempt-guarded, so a duplicate message is only wasted).


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('dispatched_attempt')
