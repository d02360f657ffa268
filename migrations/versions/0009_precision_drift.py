"""Precision drift: each suite's growth factor and window (server/services/drift.py)

Revision ID: 0009_precision_drift
Revises: 0008_history_spans_b7e1
"""
from alembic import op
import sqlalchemy as sa

revision = '0009_precision_drift'
down_revision = '0008_history_spans_b7e1'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('suites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('drift_growth', sa.Float(), nullable=False, server_default='10'))
        batch_op.add_column(sa.Column('drift_window', sa.Integer(), nullable=False, server_default='10'))


def downgrade() -> None:
    with op.batch_alter_table('suites', schema=None) as batch_op:
        batch_op.drop_column('drift_window')
        batch_op.drop_column('drift_growth')
