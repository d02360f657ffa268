"""The operator's outcome (kernel defect, infrastructure or harness, cannot judge here, acceptable) on its
overview row, in the one vocabulary (runtime/vocabulary.py, docs/dashboard.md §1)

Revision ID: 0017_operator_outcome
Revises: 0016_tenancy_sessions
"""
from alembic import op
import sqlalchemy as sa

revision = '0017_operator_outcome'
down_revision = '0016_tenancy_sessions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('operators', schema=None) as batch_op:
        batch_op.add_column(sa.Column('outcome', sa.String(length=16), nullable=True))
        batch_op.create_index('ix_operators_outcome', ['outcome'], unique=False)
    # Existing operators: decided once here from their cases' latest results; from now on by
    # results.refresh_operator.
    from server.services import results

    results.refresh_outcomes(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table('operators', schema=None) as batch_op:
        batch_op.drop_index('ix_operators_outcome')
        batch_op.drop_column('outcome')
