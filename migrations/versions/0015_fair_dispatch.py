"""Fair dispatch (docs/platform.md §4): when a job's message went out, and its priority (interactive first)

Revision ID: 0015_fair_dispatch
Revises: 0014_job_outbox
"""
import sqlalchemy as sa
from alembic import op

revision = '0015_fair_dispatch'
down_revision = '0014_job_outbox'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('dispatched_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('priority', sa.Integer(), nullable=False, server_default='0'))
        batch_op.create_index('ix_jobs_status_queue', ['status', 'queue'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_status_queue')
        batch_op.drop_column('priority')
        batch_op.drop_column('dispatched_at')
