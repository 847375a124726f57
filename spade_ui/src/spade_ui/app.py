"""The ``spade ui`` web app: server-side pages (Jinja2) over the store and run folders.

Pages:

* ``/``: the registry (store and seed environments), searched and filtered by text,
  domain, skill, status, regret and win rate, sortable;
* ``/env/{id}``: one environment: highlighted code, metadata, the validation report with
  its findings (and their replayable actions), stats over policy snapshots, lineage as a
  graph (the grounding document, parents, children), the hint, and a player;
* ``/runs`` and ``/runs/{name}``: self-play run folders and their reports (drawn by
  :mod:`spade_trainer.report` into a cache outside the run folder; redrawn when the run's
  metrics change, and the page refreshes itself while the run is still writing).

:func:`create_ui_app` wires the pages of :mod:`spade_ui.registry` and :mod:`spade_ui.runs`,
which read what they show from :class:`spade_ui.pages.UiState` (``app.state.ui``).

Every page reads the one catalog (:class:`spade_core.app.catalog.Catalog`: the plugins'
seeds and the store's environments, the store opened read-only). Playing goes through
``spade serve``'s app, mounted at ``/play``, serving the whole registry of that catalog:
every game is a sandboxed session of the same session manager and limits as ``spade
serve`` (seeds run as ``spade serve`` runs them). Nothing here writes to the store or into
a run folder.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from spade_core.app.catalog import Catalog, open_store
from spade_core.config import SpadeConfig

from . import registry, runs
from .pages import UiState, ui_of
from .reports import Reports
from .settings import UiSettings
from .token_gate import TokenGate, cookie_name

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins

HERE = Path(__file__).parent
#: Every page's: scripts only from the app's own files (``/static``), no plugins, no <base>,
#: never inside another page's frame.
CONTENT_SECURITY_POLICY = "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"


def ui_uvicorn_config(app: Any, settings: UiSettings, *, log_level: str = "warning") -> Any:
    """uvicorn's configuration for the ui app: ``spade serve``'s (connection cap, request
    read deadline, proxy headers only from ``trust_forwarded``)."""
    from spade_serve.server import uvicorn_config

    return uvicorn_config(app, settings.serve_settings(), log_level=log_level)


def _player(catalog: Catalog, config: SpadeConfig, settings: UiSettings) -> FastAPI:
    """``spade serve``'s app over the whole registry of ``catalog``, its sessions opened in
    pools of ``config``'s ``[spade.sandbox]``: what ``/play`` mounts."""
    from spade_sandbox.launcher import SandboxLauncher
    from spade_serve.app import create_app
    from spade_serve.catalog import build_catalog
    from spade_serve.env_factory import SandboxEnvFactory
    from spade_serve.sessions import SessionManager

    serve_settings = settings.serve_settings()
    factory = SandboxEnvFactory.for_server(serve_settings, SandboxLauncher.from_config(config))
    return create_app(SessionManager(build_catalog(catalog, whole_registry=True), serve_settings, factory=factory))


def create_ui_app(config: SpadeConfig, plugins: SpadePlugins, settings: UiSettings | None = None) -> FastAPI:
    """The ui app over ``config``'s store (opened read-only) and ``settings.runs_dir``."""
    settings = settings or UiSettings()
    stack = contextlib.ExitStack()
    catalog = Catalog(plugins, stack.enter_context(open_store(config, read_only=True)))
    reports = Reports()
    stack.callback(reports.close)
    play_off = settings.play_off()
    serve_app = _player(catalog, config, settings) if play_off is None else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            if serve_app is not None:
                async with serve_app.router.lifespan_context(serve_app):
                    yield
            else:
                yield
        finally:
            stack.close()

    app = FastAPI(title="SPADE ui", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.ui = UiState(catalog, settings, reports, play_off)
    app.middleware("http")(_scripts_from_the_app_only)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    if serve_app is not None:
        app.mount("/play", serve_app)
    app.add_exception_handler(HTTPException, _http_error)
    registry.register(app)
    runs.register(app)
    # Outermost last: Host, Origin and body type (spade_serve.access) for pages and the
    # player alike, then the token when the ui has one.
    if settings.token is not None:
        app.add_middleware(TokenGate, token=settings.token, port=settings.port)
    from spade_serve.access import AccessGuard, AccessRules

    app.add_middleware(AccessGuard, rules=AccessRules.of(settings.serve_settings()))
    return app


async def _scripts_from_the_app_only(request: Request, call_next: Any) -> Any:
    # Names and texts shown here come from run folders and stores the user may not have
    # written; they are escaped where they are placed, and in case one place is missed, a
    # page runs only the app's own script files: no inline script, no event handler.
    response = await call_next(request)
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    return response


async def _http_error(request: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, HTTPException)
    return ui_of(request).page(request, "error.html", status_code=exc.status_code, message=str(exc.detail))


__all__ = ["UiSettings", "cookie_name", "create_ui_app", "ui_uvicorn_config"]
