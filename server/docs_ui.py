"""The API's docs page (/docs): Swagger UI served from this server, never from a CDN.

The bundle (Swagger UI 5, which reads OpenAPI 3.1 as FastAPI writes it; the `swagger-ui-bundle`
package's 4.15 cannot) comes from the `swagger-ui-py` package's static files, pinned in
constraints.txt, so the page loads only our own files and the dashboard's origin runs no
third-party script. Its start-up script is a file too, so the page's policy allows no inline
script. ReDoc is not served: it has no bundle on PyPI (docs/SECURITY.md).
"""
from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles

ASSETS = "/docs/assets"
PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PTO Crosscheck API</title>
<link rel="stylesheet" href="{ASSETS}/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="{ASSETS}/swagger-ui-bundle.js"></script><script src="/docs/start.js"></script></body></html>
"""
START = """SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis], layout: "BaseLayout"});
"""


def install(app: FastAPI) -> None:
    """Mount /docs, its start-up script and the bundle's files."""
    app.mount(ASSETS, StaticFiles(directory=str(files("swagger_ui") / "static")), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs_page() -> HTMLResponse:
        return HTMLResponse(PAGE)

    @app.get("/docs/start.js", include_in_schema=False)
    def docs_start() -> Response:
        return Response(START, media_type="text/javascript")
