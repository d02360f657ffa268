"""Names vulture reports as unused that something outside Python reads (see [tool.vulture] in pyproject.toml).

Never imported: vulture only parses it. Add a name here only with the reason it is alive.
"""
# ruff: noqa
# flake8: noqa
_ = object()

# Read by a library we hand the object to.
_.cfg_cmd_ext  # pypto's CMake context (runtime/evidence/calculator.py)
_.build_job_num  # pypto's CMake context (runtime/evidence/calculator.py)
_.compress_type  # zipfile.ZipInfo (runtime/intake/discover.py, client/submit.py)
_.polling_interval  # kombu transport options (server/queue.py, worker/app.py)
_.openapi  # FastAPI calls app.openapi() (server/main.py)

# Serialized as JSON fields (dataclasses.asdict, pydantic response models, SQLAlchemy columns).
_.schema_version  # runtime/report.py
_.found_by  # runtime/judge/skew.py, in the report's version_skew
_.bus_id, _.power_w, _.temp_c, _.aicore_pct, _.memory_mb, _.hbm_mb  # runtime/devices/npu_smi.py card fields
_.mismatch_ratio, _.inf_count, _.output_abs_max, _.golden_abs_max, _.shape_match, _.dtype_match  # case_results
_.last_status_code, _.last_error, _.delivered_at  # webhook deliveries
_.size_bytes, _.webhook_configured, _.latest_run, _.not_reused, _.release  # API response fields
_.first_job_id, _.graph_max_abs_diff_min, _.utilization_min  # server/schemas/operator.py (history)
_.graph_failed  # history_spans column, read by name (server/services/history_spans.py POINT_KEYS)
_.next_before, _.removed  # server/schemas/audit.py, server/schemas/worker.py

_.uploaded_cases  # operators column, in GET /operators/{name} (server/schemas/operator.py)

# Called by the io machinery tarfile drives (runtime/intake/archive.py _Capped, an io.RawIOBase).
_.readable, _.seekable, _.readinto

# Read by Jinja templates (web/templates/).
_.y_label, _.x_ticks, _.span_us, _.circles, _.rects  # _charts.html
_.reproduce  # job.html
_.last_at  # _commit_history.html

# Called by the user's test files through the torch_npu stand-in (runtime/devices/standin/site/torch_npu).
_.npu_stream, _.wait_stream, _.Stream, _.get_device_name, _.is_initialized, _.get_npu_format
__getattr__  # module-level attribute hook: `torch_npu.npu_*` fused ops
_.Format, _.NCHW, _.NHWC, _.ND, _.NC1HWC0, _.FRACTAL_Z, _.FRACTAL_NZ  # torch_npu.Format, named by NZ-cast tests

# Read by tests.
_.starts  # worker/warm.py: how many warm parents a holder started (tests/worker)

# Not read yet: runtime/fence/jobfiles.py Entry records them; the hardening issue reworks that module.
_.mtime, _.ctime
_.tmp_bytes  # runtime/fence/sandbox.py JobLimits: declared, not enforced anywhere yet (the hardening issue)

# Read by argparse when it formats --help (runtime/cli/cli_help.py sets it on every subparser).
_.formatter_class

# Serialised with dataclasses.asdict into a run's totals (server/services/drift.py summary), read by tests.
_.tolerance_used

# Called by torch on a TorchDispatchMode subclass (runtime/evidence/flow.py): keeps torch._dynamo unimported.
_._should_skip_dynamo
# Serialised with dataclasses.asdict into a run's totals (server/services/perf.py summary), read by tests.
_.previous_us
_.previous_cycles

# Called by pytest inside a job (runtime/job/pytest_run.py): hooks of its plugin, and a fixture tests name.
_.pytest_collection_modifyitems, _.pytest_collection_finish, _.pytest_collectreport, _.pytest_fixture_setup
_.pytest_runtest_makereport, _.pytest_pyfunc_call, _.pytest_keyboard_interrupt
run_mode  # the fixture a test function names
_.get_soc_version  # torch_npu.npu.get_soc_version, asked by a gym's root conftest (the stand-in)

# The benchmark view's fields: read by web/templates/benchmark.html and served by GET /api/v1/benchmarks/{suite}.
_.ours_pass, _.gym_pass, _.gym_known, _.cheat, _.graph_diff

# Read by torch itself: the switch that fills uninitialised allocations in SIM jobs (runtime/job/poison.py).
_.fill_uninitialized_memory

# How many pool checkouts asked PostgreSQL first (server/db.py IdlePing): read by tests/server/test_idle_ping.py.
_.pings
