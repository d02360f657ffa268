"""Business logic shared by the API, the dashboard and the CLI."""
