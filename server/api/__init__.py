"""The JSON API under /api/v1: thin routers over server.services (assembled in server.api.routes)."""
