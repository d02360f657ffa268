"""Indexes that make an operator's page cost the same at any depth (docs/history.md §7): the jobs walk
index-only, the latest jobs by id, the spans of a date range by (operator_id, days, span)

Revision ID: 0013_depth_indexes
Revises: 0012_overview_case_counts
"""
from alembic import op

revision = '0013_depth_indexes'
down_revision = '0012_overview_case_counts'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index('ix_jobs_operator_created_id_mode', ['operator_id', 'created_at', 'id', 'mode'],
                              unique=False)
        batch_op.create_index('ix_jobs_operator_id_id', ['operator_id', 'id'], unique=False)
        # Both are prefixes of the new ones.
        batch_op.drop_index('ix_jobs_operator_created_id')
        batch_op.drop_index('ix_jobs_operator_id')
    with op.batch_alter_table('history_spans', schema=None) as batch_op:
        batch_op.create_index('ix_history_spans_operator_days_span', ['operator_id', 'days', 'span'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('history_spans', schema=None) as batch_op:
        batch_op.drop_index('ix_history_spans_operator_days_span')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index('ix_jobs_operator_id', ['operator_id'], unique=False)
        batch_op.create_index('ix_jobs_operator_created_id', ['operator_id', 'created_at', 'id'], unique=False)
        batch_op.drop_index('ix_jobs_operator_id_id')
        batch_op.drop_index('ix_jobs_operator_created_id_mode')
