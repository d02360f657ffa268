"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-12-02 14:10:02.415860
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('api_tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('scopes', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_api_tokens_token_hash'))
    )
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_tokens_prefix'), ['prefix'], unique=False)

    op.create_table('operators',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('combined_verdict', sa.String(length=32), nullable=True),
    sa.Column('case_count', sa.Integer(), nullable=False),
    sa.Column('verdict_counts', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('sim_verdict', sa.String(length=32), nullable=True),
    sa.Column('npu_verdict', sa.String(length=32), nullable=True),
    sa.Column('sim_max_abs_diff', sa.Float(), nullable=True),
    sa.Column('graph_status', sa.String(length=16), nullable=True),
    sa.Column('graph_max_abs_diff', sa.Float(), nullable=True),
    sa.Column('npu_max_abs_diff', sa.Float(), nullable=True),
    sa.Column('npu_tolerance', sa.Float(), nullable=True),
    sa.Column('aicore_time_us', sa.Float(), nullable=True),
    sa.Column('latest_sim_job_id', sa.Integer(), nullable=True),
    sa.Column('latest_npu_job_id', sa.Integer(), nullable=True),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_operators')),
    sa.UniqueConstraint('name', name=op.f('uq_operators_name'))
    )
    with op.batch_alter_table('operators', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_operators_combined_verdict'), ['combined_verdict'], unique=False)
        batch_op.create_index(batch_op.f('ix_operators_updated_at'), ['updated_at'], unique=False)

    op.create_table('suite_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_by', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_suite_runs'))
    )
    op.create_table('workers',
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('host', sa.String(length=200), nullable=False),
    sa.Column('queues', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('capabilities', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_heartbeat', sa.DateTime(timezone=True), nullable=False),
    sa.Column('current_job_id', sa.Integer(), nullable=True),
    sa.Column('jobs_done', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_workers'))
    )
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_workers_last_heartbeat'), ['last_heartbeat'], unique=False)

    op.create_table('case_states',
    sa.Column('operator_id', sa.Integer(), nullable=False),
    sa.Column('case', sa.String(length=200), nullable=False),
    sa.Column('sim_result_id', sa.Integer(), nullable=True),
    sa.Column('npu_result_id', sa.Integer(), nullable=True),
    sa.Column('combined_verdict', sa.String(length=32), nullable=False),
    sa.Column('reason', sa.String(length=300), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['operator_id'], ['operators.id'], name=op.f('fk_case_states_operator_id_operators'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('operator_id', 'case', name=op.f('pk_case_states'))
    )
    with op.batch_alter_table('case_states', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_case_states_combined_verdict'), ['combined_verdict'], unique=False)

    op.create_table('submissions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('operator', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('filename', sa.String(length=300), nullable=False),
    sa.Column('bundle_sha256', sa.String(length=64), nullable=False),
    sa.Column('blob_path', sa.String(length=500), nullable=False),
    sa.Column('modes', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('case_filter', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('branch', sa.String(length=200), nullable=True),
    sa.Column('commit', sa.String(length=100), nullable=True),
    sa.Column('author', sa.String(length=200), nullable=True),
    sa.Column('suite_run_id', sa.Integer(), nullable=True),
    sa.Column('idempotency_key', sa.String(length=200), nullable=True),
    sa.Column('created_by', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['suite_run_id'], ['suite_runs.id'], name=op.f('fk_submissions_suite_run_id_suite_runs'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_submissions')),
    sa.UniqueConstraint('idempotency_key', name=op.f('uq_submissions_idempotency_key'))
    )
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_submissions_author'), ['author'], unique=False)
        batch_op.create_index(batch_op.f('ix_submissions_branch'), ['branch'], unique=False)
        batch_op.create_index(batch_op.f('ix_submissions_bundle_sha256'), ['bundle_sha256'], unique=False)
        batch_op.create_index(batch_op.f('ix_submissions_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_submissions_operator'), ['operator'], unique=False)

    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('submission_id', sa.Integer(), nullable=False),
    sa.Column('operator_id', sa.Integer(), nullable=False),
    sa.Column('mode', sa.String(length=8), nullable=False),
    sa.Column('queue', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('worker', sa.String(length=200), nullable=True),
    sa.Column('env_fingerprint', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('progress', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('summary', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('timeout_s', sa.Float(), nullable=False),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('submitted_by', sa.String(length=100), nullable=False),
    sa.Column('report_path', sa.String(length=500), nullable=True),
    sa.Column('case_count', sa.Integer(), nullable=False),
    sa.Column('duration_s', sa.Float(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('queued_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['operator_id'], ['operators.id'], name=op.f('fk_jobs_operator_id_operators'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], name=op.f('fk_jobs_submission_id_submissions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jobs_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_operator_id'), ['operator_id'], unique=False)
        batch_op.create_index('ix_jobs_queue_status_created', ['queue', 'status', 'created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_status'), ['status'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_submission_id'), ['submission_id'], unique=False)

    op.create_table('case_results',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('operator_id', sa.Integer(), nullable=False),
    sa.Column('operator', sa.String(length=200), nullable=False),
    sa.Column('case', sa.String(length=200), nullable=False),
    sa.Column('mode', sa.String(length=8), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('verdict', sa.String(length=32), nullable=False),
    sa.Column('structural', sa.String(length=16), nullable=False),
    sa.Column('stage', sa.String(length=32), nullable=False),
    sa.Column('precision', sa.String(length=16), nullable=False),
    sa.Column('output_written', sa.Boolean(), nullable=True),
    sa.Column('kernel_launches', sa.Integer(), nullable=False),
    sa.Column('max_abs_diff', sa.Float(), nullable=True),
    sa.Column('max_rel_diff', sa.Float(), nullable=True),
    sa.Column('mismatch_ratio', sa.Float(), nullable=True),
    sa.Column('nan_count', sa.Integer(), nullable=True),
    sa.Column('inf_count', sa.Integer(), nullable=True),
    sa.Column('output_abs_max', sa.Float(), nullable=True),
    sa.Column('golden_abs_max', sa.Float(), nullable=True),
    sa.Column('rtol', sa.Float(), nullable=True),
    sa.Column('atol', sa.Float(), nullable=True),
    sa.Column('shape_match', sa.Boolean(), nullable=True),
    sa.Column('dtype_match', sa.Boolean(), nullable=True),
    sa.Column('aicore_time_us', sa.Float(), nullable=True),
    sa.Column('utilization', sa.Float(), nullable=True),
    sa.Column('total_cycles', sa.Integer(), nullable=True),
    sa.Column('aic_tasks', sa.Integer(), nullable=True),
    sa.Column('aiv_tasks', sa.Integer(), nullable=True),
    sa.Column('graph_status', sa.String(length=16), nullable=True),
    sa.Column('graph_max_abs_diff', sa.Float(), nullable=True),
    sa.Column('duration_s', sa.Float(), nullable=False),
    sa.Column('error_type', sa.String(length=200), nullable=True),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.Column('diagnosis_rules', sa.String(length=500), nullable=False),
    sa.Column('branch', sa.String(length=200), nullable=True),
    sa.Column('commit', sa.String(length=100), nullable=True),
    sa.Column('author', sa.String(length=200), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('report', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_case_results_job_id_jobs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['operator_id'], ['operators.id'], name=op.f('fk_case_results_operator_id_operators'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_case_results'))
    )
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_case_results_branch'), ['branch'], unique=False)
        batch_op.create_index('ix_case_results_created_at', ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_case_results_job_id'), ['job_id'], unique=False)
        batch_op.create_index('ix_case_results_mode_id', ['mode', 'id'], unique=False)
        batch_op.create_index('ix_case_results_operator_mode_id', ['operator_id', 'mode', 'id'], unique=False)
        batch_op.create_index('ix_case_results_verdict_id', ['verdict', 'id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('case_results', schema=None) as batch_op:
        batch_op.drop_index('ix_case_results_verdict_id')
        batch_op.drop_index('ix_case_results_operator_mode_id')
        batch_op.drop_index('ix_case_results_mode_id')
        batch_op.drop_index(batch_op.f('ix_case_results_job_id'))
        batch_op.drop_index('ix_case_results_created_at')
        batch_op.drop_index(batch_op.f('ix_case_results_branch'))

    op.drop_table('case_results')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_submission_id'))
        batch_op.drop_index(batch_op.f('ix_jobs_status'))
        batch_op.drop_index('ix_jobs_queue_status_created')
        batch_op.drop_index(batch_op.f('ix_jobs_operator_id'))
        batch_op.drop_index(batch_op.f('ix_jobs_created_at'))

    op.drop_table('jobs')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_submissions_operator'))
        batch_op.drop_index(batch_op.f('ix_submissions_created_at'))
        batch_op.drop_index(batch_op.f('ix_submissions_bundle_sha256'))
        batch_op.drop_index(batch_op.f('ix_submissions_branch'))
        batch_op.drop_index(batch_op.f('ix_submissions_author'))

    op.drop_table('submissions')
    with op.batch_alter_table('case_states', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_case_states_combined_verdict'))

    op.drop_table('case_states')
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_workers_last_heartbeat'))

    op.drop_table('workers')
    op.drop_table('suite_runs')
    with op.batch_alter_table('operators', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_operators_updated_at'))
        batch_op.drop_index(batch_op.f('ix_operators_combined_verdict'))

    op.drop_table('operators')
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_tokens_prefix'))

    op.drop_table('api_tokens')
