"""The worker: a Celery app whose thin tasks call plain job functions (worker.jobs).

The worker talks to the server only over its HTTP API (claim, bundle, heartbeat, result), so a
worker host needs no database access: only BROKER_URL, API_URL and a WORKER_TOKEN.
"""
