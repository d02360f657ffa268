"""The year view from summaries: an operator's runs per span of UTC days, written with the results

Revision ID: 0008_history_spans_b7e1
Revises: 0007_pypto_queues
"""
from alembic import op
import sqlalchemy as sa

revision = '0008_history_spans_b7e1'
down_revision = '0007_pypto_queues'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('history_spans',
    sa.Column('operator_id', sa.Integer(), nullable=False),
    sa.Column('case', sa.String(length=200), nullable=False),
    sa.Column('mode', sa.String(length=8), nullable=False),
    sa.Column('days', sa.Integer(), nullable=False),
    sa.Column('span', sa.Integer(), nullable=False),
    sa.Column('runs', sa.Integer(), nullable=False),
    sa.Column('cases', sa.Integer(), nullable=False),
    sa.Column('first_job_id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('until', sa.DateTime(timezone=True), nullable=False),
    sa.Column('commit', sa.String(length=100), nullable=True),
    sa.Column('branch', sa.String(length=200), nullable=True),
    sa.Column('atol', sa.Float(), nullable=True),
    sa.Column('rtol', sa.Float(), nullable=True),
    sa.Column('max_abs_diff', sa.Float(), nullable=True),
    sa.Column('max_abs_diff_min', sa.Float(), nullable=True),
    sa.Column('graph_max_abs_diff', sa.Float(), nullable=True),
    sa.Column('graph_max_abs_diff_min', sa.Float(), nullable=True),
    sa.Column('aicore_time_us', sa.Float(), nullable=True),
    sa.Column('aicore_time_us_min', sa.Float(), nullable=True),
    sa.Column('utilization', sa.Float(), nullable=True),
    sa.Column('utilization_min', sa.Float(), nullable=True),
    sa.Column('graph_failed', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['operator_id'], ['operators.id'], name=op.f('fk_history_spans_operator_id_operators'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('operator_id', 'case', 'mode', 'days', 'span', name=op.f('pk_history_spans'))
    )
    # Existing results: summarised once here; from now on where results are stored.
    from server.services import history_spans

    history_spans.rebuild(op.get_bind())


def downgrade() -> None:
    op.drop_table('history_spans')
