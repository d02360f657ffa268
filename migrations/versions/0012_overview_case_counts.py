"""The overview row's case counts on the operator (server/models/operator.py): one row per operator a page

Revision ID: 0012_overview_case_counts
Revises: 0011_suite_run_culprits
"""
from alembic import op
import sqlalchemy as sa

revision = '0012_overview_case_counts'
down_revision = '0011_suite_run_culprits'
branch_labels = None
depends_on = None

COUNTS = ('sim_cases', 'graph_cases', 'npu_cases', 'sim_nan_count')


def upgrade() -> None:
    with op.batch_alter_table('operators', schema=None) as batch_op:
        for name in COUNTS:
            batch_op.add_column(sa.Column(name, sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('sim_unwritten', sa.Boolean(), nullable=False, server_default=sa.false()))
    # Existing operators: counted once here; from now on by results.refresh_operator.
    from server.services import results

    results.refresh_case_counts(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table('operators', schema=None) as batch_op:
        for name in ('sim_unwritten',) + COUNTS[::-1]:
            batch_op.drop_column(name)
