"""``/docs`` (Swagger UI) and ``/redoc`` served from assets packaged with ``fastapi-offline``
(MIT; it bundles swagger-ui, Apache-2.0, and redoc, MIT): the pages work with no network, and
Swagger UI's Authorize button takes an API key for "Try it out"."""

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
STATIC = "/static/docs"


def mount(app: FastAPI) -> None:
    """Add ``/docs``, ``/redoc`` and their assets under ``/static/docs``."""
    app.mount(STATIC, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters,
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{STATIC}/redoc.standalone.js",
            redoc_favicon_url=f"{STATIC}/favicon.png",
            with_google_fonts=False,
        )
