"""Alembic migrations: the only schema authority."""
