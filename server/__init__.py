"""PTO Crosscheck service: REST API, models, settings and auth."""
