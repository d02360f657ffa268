"""Tenancy: an operator's owner and its uploaded latest results; dashboard sessions apart from API tokens

Revision ID: 0016_tenancy_sessions
Revises: 0015_fair_dispatch
"""
from alembic import op
import sqlalchemy as sa

revision = '0016_tenancy_sessions'
down_revision = '0015_fair_dispatch'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('operators', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner', sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column('uploaded_cases', sa.Integer(), nullable=False, server_default='0'))
    # An existing operator belongs to the token that first submitted or uploaded it.
    op.execute("UPDATE operators SET owner = (SELECT s.created_by FROM submissions s WHERE s.operator = operators.name "
               "AND s.created_by != '' ORDER BY s.id LIMIT 1)")
    op.execute("UPDATE operators SET uploaded_cases = (SELECT count(*) FROM case_states cs JOIN case_results r "
               "ON r.id = cs.sim_result_id OR r.id = cs.npu_result_id "
               "WHERE cs.operator_id = operators.id AND r.source = 'upload')")
    op.create_table(
        'web_sessions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('session_hash', sa.String(length=64), nullable=False),
        sa.Column('token_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_web_sessions_token_id_api_tokens'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_web_sessions')),
        sa.UniqueConstraint('session_hash', name=op.f('uq_web_sessions_session_hash')),
    )
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_web_sessions_token_id'), ['token_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_web_sessions_token_id'))
    op.drop_table('web_sessions')
    with op.batch_alter_table('operators', schema=None) as batch_op:
        batch_op.drop_column('uploaded_cases')
        batch_op.drop_column('owner')
