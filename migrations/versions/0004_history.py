"""History at scale: an operator's runs by date, its results by id, and daily aggregates kept by compaction

Revision ID: 0004_history
Revises: 0003_npu_cards
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0004_history'
down_revision = '0003_npu_cards'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('case_days',
    sa.Column('operator_id', sa.Integer(), nullable=False),
    sa.Column('mode', sa.String(length=8), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('runs', sa.Integer(), nullable=False),
    sa.Column('results', sa.Integer(), nullable=False),
    sa.Column('verdict_counts', JSON, nullable=False),
    sa.Column('max_abs_diff_min', sa.Float(), nullable=True),
    sa.Column('max_abs_diff_max', sa.Float(), nullable=True),
    sa.Column('graph_max_abs_diff_max', sa.Float(), nullable=True),
    sa.Column('aicore_time_us_min', sa.Float(), nullable=True),
    sa.Column('aicore_time_us_max', sa.Float(), nullable=True),
    sa.Column('last_result_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['operator_id'], ['operators.id'], name=op.f('fk_case_days_operator_id_operators'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('operator_id', 'mode', 'day', name=op.f('pk_case_days'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index('ix_jobs_operator_created_id', ['operator_id', 'created_at', 'id'], unique=False)
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.create_index('ix_case_results_operator_id_id', ['operator_id', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.drop_index('ix_case_results_operator_id_id')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_operator_created_id')
    op.drop_table('case_days')
