"""Performance regressions in SIM: each suite's threshold in percent (server/services/perf.py)

Revision ID: 0010_perf_threshold
Revises: 0009_precision_drift
"""
from alembic import op
import sqlalchemy as sa

revision = '0010_perf_threshold'
down_revision = '0009_precision_drift'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('suites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('perf_threshold', sa.Float(), nullable=False, server_default='10'))


def downgrade() -> None:
    with op.batch_alter_table('suites', schema=None) as batch_op:
        batch_op.drop_column('perf_threshold')
