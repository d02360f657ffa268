"""NPU hosts: when a job started waiting for an NPU worker, and the card releases admins asked for

Revision ID: 0003_npu_cards
Revises: 0002_suite_runs
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0003_npu_cards'
down_revision = '0002_suite_runs'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('awaiting_since', sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('card_releases', JSON, nullable=False, server_default='{}'))


def downgrade() -> None:
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.drop_column('card_releases')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('awaiting_since')
