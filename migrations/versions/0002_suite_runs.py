"""suite runs, their results, provenance on case results, webhook deliveries

Revision ID: 0002_suite_runs
Revises: 0001
Create Date: 2026-12-02 20:11:27
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0002_suite_runs'
down_revision = '0001'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('suites',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('flaky_window', sa.Integer(), nullable=False),
    sa.Column('flaky_min_flips', sa.Integer(), nullable=False),
    sa.Column('webhook_url', sa.String(length=500), nullable=True),
    sa.Column('webhook_secret', sa.String(length=200), nullable=True),
    sa.Column('created_by', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_suites')),
    sa.UniqueConstraint('name', name=op.f('uq_suites_name'))
    )

    # Suite runs existed as a bare table: give any old rows a suite of their name and a run key.
    with op.batch_alter_table('suite_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('suite_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('run_key', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('branch', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('commit', sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column('pipeline_url', sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column('modes', JSON, nullable=False, server_default='[]'))
        batch_op.add_column(sa.Column('reuse', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('status', sa.String(length=16), nullable=False, server_default='finished'))
        batch_op.add_column(sa.Column('closed_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('duration_s', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('previous_run_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('totals', JSON, nullable=False, server_default='{}'))
        batch_op.add_column(sa.Column('compare', JSON, nullable=False, server_default='{}'))
    op.execute("INSERT INTO suites (name, flaky_window, flaky_min_flips, created_by, created_at) "
               "SELECT DISTINCT name, 10, 2, '', MIN(created_at) FROM suite_runs GROUP BY name")
    op.execute("UPDATE suite_runs SET suite_id = (SELECT id FROM suites WHERE suites.name = suite_runs.name), "
               "run_key = 'run-' || CAST(id AS VARCHAR(20))")
    with op.batch_alter_table('suite_runs', schema=None) as batch_op:
        batch_op.alter_column('suite_id', existing_type=sa.Integer(), nullable=False)
        batch_op.alter_column('run_key', existing_type=sa.String(length=200), nullable=False)
        for name in ('modes', 'reuse', 'status', 'totals', 'compare'):
            batch_op.alter_column(name, server_default=None)
        batch_op.create_index(batch_op.f('ix_suite_runs_commit'), ['commit'], unique=False)
        batch_op.create_index(batch_op.f('ix_suite_runs_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_suite_runs_status'), ['status'], unique=False)
        batch_op.create_index('ix_suite_runs_suite_branch_id', ['suite_id', 'branch', 'id'], unique=False)
        batch_op.create_unique_constraint(batch_op.f('uq_suite_runs_suite_id'), ['suite_id', 'run_key'])
        batch_op.create_foreign_key(batch_op.f('fk_suite_runs_suite_id_suites'), 'suites', ['suite_id'], ['id'],
                                    ondelete='CASCADE')

    op.create_table('webhook_deliveries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('suite_run_id', sa.Integer(), nullable=False),
    sa.Column('event', sa.String(length=64), nullable=False),
    sa.Column('url', sa.String(length=500), nullable=False),
    sa.Column('payload', JSON, nullable=False),
    sa.Column('digest', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_status_code', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('log', JSON, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['suite_run_id'], ['suite_runs.id'], name=op.f('fk_webhook_deliveries_suite_run_id_suite_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_deliveries'))
    )
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_next_attempt_at'), ['next_attempt_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_status'), ['status'], unique=False)
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_suite_run_id'), ['suite_run_id'], unique=False)

    op.create_table('suite_run_results',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('suite_run_id', sa.Integer(), nullable=False),
    sa.Column('operator', sa.String(length=200), nullable=False),
    sa.Column('case', sa.String(length=200), nullable=False),
    sa.Column('mode', sa.String(length=8), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('verdict', sa.String(length=32), nullable=True),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('case_result_id', sa.Integer(), nullable=True),
    sa.Column('job_id', sa.Integer(), nullable=True),
    sa.Column('reused_from_job_id', sa.Integer(), nullable=True),
    sa.Column('content_sha256', sa.String(length=64), nullable=True),
    sa.Column('max_abs_diff', sa.Float(), nullable=True),
    sa.Column('graph_max_abs_diff', sa.Float(), nullable=True),
    sa.Column('diagnosis_rules', sa.String(length=500), nullable=False),
    sa.Column('verified', sa.Boolean(), nullable=False),
    sa.Column('flips', sa.Integer(), nullable=False),
    sa.Column('note', sa.String(length=300), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['case_result_id'], ['case_results.id'], name=op.f('fk_suite_run_results_case_result_id_case_results'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['suite_run_id'], ['suite_runs.id'], name=op.f('fk_suite_run_results_suite_run_id_suite_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_suite_run_results')),
    sa.UniqueConstraint('suite_run_id', 'operator', 'case', 'mode', 'attempt', name=op.f('uq_suite_run_results_suite_run_id'))
    )
    with op.batch_alter_table('suite_run_results', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_suite_run_results_case_result_id'), ['case_result_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_suite_run_results_job_id'), ['job_id'], unique=False)

    # Provenance: every earlier result came from a worker; server defaults fill the existing rows.
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.add_column(sa.Column('source', sa.String(length=16), nullable=False, server_default='worker'))
        batch_op.add_column(sa.Column('source_name', sa.String(length=200), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('device', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('verified', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('content_sha256', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('reuse_key', sa.String(length=64), nullable=True))
        batch_op.create_index('ix_case_results_reuse_key_id', ['reuse_key', 'id'], unique=False)
    op.execute("UPDATE case_results SET source_name = COALESCE((SELECT worker FROM jobs "
               "WHERE jobs.id = case_results.job_id), '')")


def downgrade() -> None:
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.drop_index('ix_case_results_reuse_key_id')
        batch_op.drop_column('reuse_key')
        batch_op.drop_column('content_sha256')
        batch_op.drop_column('verified')
        batch_op.drop_column('device')
        batch_op.drop_column('source_name')
        batch_op.drop_column('source')

    with op.batch_alter_table('suite_run_results', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_suite_run_results_job_id'))
        batch_op.drop_index(batch_op.f('ix_suite_run_results_case_result_id'))
    op.drop_table('suite_run_results')

    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_suite_run_id'))
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_status'))
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_next_attempt_at'))
    op.drop_table('webhook_deliveries')

    with op.batch_alter_table('suite_runs', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_suite_runs_suite_id_suites'), type_='foreignkey')
        batch_op.drop_constraint(batch_op.f('uq_suite_runs_suite_id'), type_='unique')
        batch_op.drop_index('ix_suite_runs_suite_branch_id')
        batch_op.drop_index(batch_op.f('ix_suite_runs_status'))
        batch_op.drop_index(batch_op.f('ix_suite_runs_created_at'))
        batch_op.drop_index(batch_op.f('ix_suite_runs_commit'))
        for name in ('compare', 'totals', 'previous_run_id', 'duration_s', 'finished_at', 'closed_at', 'status',
                     'reuse', 'modes', 'pipeline_url', 'commit', 'branch', 'run_key', 'suite_id'):
            batch_op.drop_column(name)
    op.drop_table('suites')
