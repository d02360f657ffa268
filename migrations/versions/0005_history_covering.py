"""History at scale: a job's results with their history values in one index (index-only reads of a run)

Revision ID: 0005_history_covering
Revises: 0004_history
"""
from alembic import op

revision = '0005_history_covering'
down_revision = '0004_history'
branch_labels = None
depends_on = None

COLUMNS = ['job_id', 'mode', 'verdict', 'max_abs_diff', 'graph_max_abs_diff', 'atol', 'rtol', 'aicore_time_us',
           'utilization', 'commit', 'branch']


def upgrade() -> None:
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.create_index('ix_case_results_job_values', COLUMNS, unique=False)
        batch_op.drop_index('ix_case_results_job_id')


def downgrade() -> None:
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.create_index('ix_case_results_job_id', ['job_id'], unique=False)
        batch_op.drop_index('ix_case_results_job_values')
