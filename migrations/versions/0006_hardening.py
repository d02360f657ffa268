"""Hardening: who posted each result, workers bound to their token, Idempotency-Key per token, the audit log

Revision ID: 0006_hardening
Revises: 0005_history_covering
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0006_hardening'
down_revision = '0005_history_covering'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table(
        'audit_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('actor', sa.String(length=100), nullable=False),
        sa.Column('token_id', sa.Integer(), nullable=True),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('target', sa.String(length=200), nullable=False),
        sa.Column('detail', JSON, nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_events')),
    )
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_events_at'), ['at'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_events_action'), ['action'], unique=False)
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('claim_token_id', sa.Integer(), nullable=True))
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.add_column(sa.Column('token_id', sa.Integer(), nullable=True))
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('token_id', sa.Integer(), nullable=True))
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('token_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('request_sha256', sa.String(length=64), nullable=True))
        batch_op.drop_constraint('uq_submissions_idempotency_key', type_='unique')
        batch_op.create_unique_constraint('uq_submissions_token_id_idempotency_key', ['token_id', 'idempotency_key'])


def downgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_constraint('uq_submissions_token_id_idempotency_key', type_='unique')
        batch_op.create_unique_constraint('uq_submissions_idempotency_key', ['idempotency_key'])
        batch_op.drop_column('request_sha256')
        batch_op.drop_column('token_id')
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.drop_column('token_id')
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.drop_column('token_id')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('claim_token_id')
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_events_action'))
        batch_op.drop_index(batch_op.f('ix_audit_events_at'))
    op.drop_table('audit_events')
