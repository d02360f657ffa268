"""Culprits: the commit a bisect named for a regressed operator of a suite run (server/models/culprit.py)

Revision ID: 0011_suite_run_culprits
Revises: 0010_perf_threshold
"""
from alembic import op
import sqlalchemy as sa

revision = '0011_suite_run_culprits'
down_revision = '0010_perf_threshold'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('suite_run_culprits',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('suite_run_id', sa.Integer(), nullable=False),
    sa.Column('operator', sa.String(length=200), nullable=False),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('subject', sa.String(length=300), nullable=False),
    sa.Column('metric', sa.String(length=16), nullable=False),
    sa.Column('created_by', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['suite_run_id'], ['suite_runs.id'],
                            name=op.f('fk_suite_run_culprits_suite_run_id_suite_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_suite_run_culprits')),
    sa.UniqueConstraint('suite_run_id', 'operator', name=op.f('uq_suite_run_culprits_suite_run_id'))
    )
    with op.batch_alter_table('suite_run_culprits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_suite_run_culprits_suite_run_id'), ['suite_run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('suite_run_culprits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_suite_run_culprits_suite_run_id'))
    op.drop_table('suite_run_culprits')
