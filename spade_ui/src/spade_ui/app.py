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

Playing goes through ``spade serve``'s app, mounted at ``/play``: every game is a
sandboxed session of the same session manager and limits as ``spade serve`` (seeds run as
``spade serve`` runs them). Nothing here writes to the store or into a run folder.
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from spade_core.app.catalog import CatalogEntry, open_store, resolve, seed_entries
from spade_core.app.jsonl import read_jsonl
from spade_core.config import SpadeConfig
from spade_core.errors import EnvNotFound, SpadeError

from .lineage import lineage_svg
from .token_gate import TokenGate, cookie_name

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins

HERE = Path(__file__).parent
#: Every page's: scripts only from the app's own files (``/static``), no plugins, no <base>,
#: never inside another page's frame.
CONTENT_SECURITY_POLICY = "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
#: A run whose metrics changed this recently is taken as still running (its page refreshes).
LIVE_WITHIN_S = 120.0
SORTS = ("id", "regret", "win_rate", "turns", "created")


@dataclass(frozen=True)
class UiSettings:
    """Where ``spade ui`` listens and what it offers."""

    host: str = "127.0.0.1"
    port: int = 8100
    runs_dir: Path = Path("runs")
    #: Offer playing (sandboxed sessions through ``spade serve``'s app at ``/play``).
    play: bool = True
    #: Store environments read for one registry page (filters run over these).
    max_listed: int = 5_000
    serve: dict[str, Any] = field(default_factory=dict)
    #: A bearer token (``spade ui --token-file``): every page and ``/play`` then need it,
    #: from a cookie the browser gets by opening ``/?token=<token>`` once (taken on the ui's
    #: own pages only, :mod:`spade_ui.token_gate`), or as ``Authorization: Bearer``.
    #: Without one, playing is offered on loopback only.
    token: str | None = None
    #: As ``spade serve``'s (docs/serving.md, "Security"): Host names answered besides the
    #: listen address, web origins whose pages may call the ui, proxies whose
    #: ``X-Forwarded-For`` is read.
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    trust_forwarded: tuple[str, ...] = ()

    @property
    def loopback_only(self) -> bool:
        return self.serve_settings().loopback_only

    def play_off(self) -> str | None:
        """Why playing is off, or ``None`` when it is offered: off with ``--no-play``, and
        off on an address beyond loopback without a token (anyone there could run sessions)."""
        if not self.play:
            return "spade ui --no-play"
        if self.token is None and not self.loopback_only:
            return "this ui listens beyond loopback without a token: spade ui --token-file FILE to play"
        return None

    def serve_settings(self) -> Any:
        """The :class:`~spade_serve.settings.ServeSettings` of the mounted player and of
        the server (address, Host/Origin rules, trusted proxies, connection limits)."""
        from spade_serve.settings import ServeSettings

        access = {"host": self.host, "port": self.port, "token": self.token, "allow_hosts": self.allow_hosts,
                  "allow_origins": self.allow_origins, "trust_forwarded": self.trust_forwarded}
        return ServeSettings(**{"max_sessions": 64, "max_sessions_per_client": 16, **self.serve, **access})


def ui_uvicorn_config(app: Any, settings: UiSettings, *, log_level: str = "warning") -> Any:
    """uvicorn's configuration for the ui app: ``spade serve``'s (connection cap, request
    read deadline, proxy headers only from ``trust_forwarded``)."""
    from spade_serve.server import uvicorn_config

    return uvicorn_config(app, settings.serve_settings(), log_level=log_level)


def _num(value: str | None, what: str) -> float | None:
    if value is None or value.strip() == "":
        return None
    try:
        x = float(value)
    except ValueError:
        raise HTTPException(400, f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise HTTPException(400, f"{what} must be finite, got {value!r}")
    return x


def _row(entry: CatalogEntry) -> dict[str, Any]:
    s = entry.summary()
    s["created"] = entry.metadata.created_at.isoformat(timespec="seconds")
    return s


def filter_rows(
    rows: list[dict[str, Any]],
    *,
    q: str = "",
    domain: str = "",
    skill: str = "",
    status: str = "",
    regret_min: float | None = None,
    regret_max: float | None = None,
    win_min: float | None = None,
    win_max: float | None = None,
    sort: str = "id",
) -> list[dict[str, Any]]:
    """The registry rows that match every filter given, sorted (numbers high first; rows
    without the number last). A bound on regret or win rate leaves out rows never measured."""
    words = q.lower().split()

    def keep(r: dict[str, Any]) -> bool:
        if domain and r["domain"] != domain:
            return False
        if skill and r["skill"] != skill:
            return False
        if status and r["status"] != status:
            return False
        text = " ".join(str(r.get(k) or "") for k in ("id", "name", "skill", "domain", "description")).lower()
        if any(w not in text for w in words):
            return False
        for key, lo, hi in (("regret", regret_min, regret_max), ("win_rate", win_min, win_max)):
            v = r.get(key)
            if lo is None and hi is None:
                continue
            if v is None or (lo is not None and v < lo) or (hi is not None and v > hi):
                return False
        return True

    out = [r for r in rows if keep(r)]
    if sort == "id":
        out.sort(key=lambda r: r["id"])
    else:
        key = {"turns": "max_turns"}.get(sort, sort)
        out.sort(key=lambda r: (r.get(key) is None, -(r[key]) if isinstance(r.get(key), (int, float)) else 0,
                                str(r.get(key) or ""), r["id"]))
        if sort == "created":
            out.sort(key=lambda r: r["created"], reverse=True)
    return out


class _Reports:
    """Run reports drawn into a cache folder of this process, redrawn when the run's
    ``metrics.jsonl`` (or its archive) changes."""

    def __init__(self) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="spade-ui-reports-"))
        self._drawn: dict[str, float] = {}
        self._lock = threading.Lock()

    def folder(self, run: Path) -> Path:
        from spade_trainer.report import write_report

        stamp = max((p.stat().st_mtime for p in run.glob("*.jsonl")), default=0.0)
        out = self._root / run.name
        with self._lock:
            if self._drawn.get(run.name) != stamp or not (out / "report.html").is_file():
                write_report(run, out)
                self._drawn[run.name] = stamp
        return out

    def close(self) -> None:
        import shutil

        shutil.rmtree(self._root, ignore_errors=True)


def create_ui_app(config: SpadeConfig, plugins: SpadePlugins, settings: UiSettings | None = None) -> FastAPI:
    """The ui app over ``config``'s store (opened read-only) and ``settings.runs_dir``."""
    settings = settings or UiSettings()
    stack = contextlib.ExitStack()
    store = stack.enter_context(open_store(config, read_only=True))
    reports = _Reports()
    stack.callback(reports.close)
    serve_app = None
    play_off = settings.play_off()
    if play_off is None:
        from spade_serve.app import create_app
        from spade_serve.catalog import build_catalog
        from spade_serve.sessions import SessionManager

        catalog = build_catalog(plugins, store, whole_registry=True)
        serve_settings = settings.serve_settings()
        from spade_sandbox.launcher import SandboxLauncher

        serve_app = create_app(SessionManager(catalog, serve_settings, launcher=SandboxLauncher.from_config(config)))

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

    @app.middleware("http")
    async def scripts_from_the_app_only(request: Request, call_next: Any) -> Any:
        # Names and texts shown here come from run folders and stores the user may not have
        # written; they are escaped where they are placed, and in case one place is missed, a
        # page runs only the app's own script files: no inline script, no event handler.
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    if serve_app is not None:
        app.mount("/play", serve_app)

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, {"play": serve_app is not None, "play_off": play_off,
                                                          **context}, status_code=status_code)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> HTMLResponse:
        return page(request, "error.html", status_code=exc.status_code, message=str(exc.detail))

    def all_rows() -> list[dict[str, Any]]:
        rows = [_row(e) for e in seed_entries(plugins)]
        rows += [_row(CatalogEntry("store", m)) for m in store.find(limit=settings.max_listed)]
        return rows

    @app.get("/", response_class=HTMLResponse)
    def registry(
        request: Request, q: str = "", domain: str = "", skill: str = "", status: str = "",
        regret_min: str | None = None, regret_max: str | None = None,
        win_min: str | None = None, win_max: str | None = None, sort: str = "id",
    ) -> HTMLResponse:
        if sort not in SORTS:
            raise HTTPException(400, f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
        rows = all_rows()
        shown = filter_rows(
            rows, q=q, domain=domain, skill=skill, status=status,
            regret_min=_num(regret_min, "regret_min"), regret_max=_num(regret_max, "regret_max"),
            win_min=_num(win_min, "win_min"), win_max=_num(win_max, "win_max"), sort=sort,
        )
        form = {"q": q, "domain": domain, "skill": skill, "status": status, "regret_min": regret_min or "",
                "regret_max": regret_max or "", "win_min": win_min or "", "win_max": win_max or "", "sort": sort}
        return page(
            request, "registry.html", rows=shown, total=len(rows), form=form, sorts=SORTS,
            domains=sorted({r["domain"] for r in rows}), skills=sorted({r["skill"] for r in rows}),
            statuses=["admitted", "candidate", "retired"],
        )

    @app.get("/env/{env_id:path}", response_class=HTMLResponse)
    def environment(request: Request, env_id: str) -> HTMLResponse:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        try:
            entry = resolve(env_id, plugins, store)
            source = entry.source(store)
        except EnvNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        except SpadeError as exc:
            raise HTTPException(500, str(exc)) from None
        m = entry.metadata
        formatter = HtmlFormatter(linenos="inline", cssclass="highlight")
        parents: list[Any] = []
        children: list[Any] = []
        if entry.kind == "store":
            parents = [p for p in store.lineage(m.id) if p.id in m.parent_ids]
            children = [c for c in store.descendants(m.id) if m.id in c.parent_ids]
        missing_parents = [p for p in m.parent_ids if p not in {x.id for x in parents}]
        findings = m.validation.findings if m.validation is not None else []
        return page(
            request, "env.html", entry=entry, m=m, code=highlight(source, PythonLexer(), formatter),
            code_css=formatter.get_style_defs(".highlight"), findings=findings,
            lineage=lineage_svg(m, parents, children, missing_parents),
            metadata_json=json.dumps(
                m.model_dump(mode="json", exclude={"validation", "stats"}), indent=2, ensure_ascii=False
            ),
            playable=serve_app is not None and (entry.kind == "seed" or m.status.value == "admitted"),
        )

    def run_folders() -> list[Path]:
        root = settings.runs_dir
        if not root.is_dir():
            return []
        return sorted((p for p in root.iterdir() if (p / "metrics.jsonl").is_file()),
                      key=lambda p: (p / "metrics.jsonl").stat().st_mtime, reverse=True)

    @app.get("/runs", response_class=HTMLResponse)
    def runs(request: Request) -> HTMLResponse:
        now = time.time()
        listed = []
        for run in run_folders():
            records = read_jsonl(run / "metrics.jsonl")
            listed.append({"name": run.name, "iterations": len(records), "last": records[-1] if records else {},
                           "live": now - (run / "metrics.jsonl").stat().st_mtime < LIVE_WITHIN_S})
        return page(request, "runs.html", runs=listed, runs_dir=str(settings.runs_dir))

    def run_folder(name: str) -> Path:
        match = next((p for p in run_folders() if p.name == name), None)
        if match is None:
            raise HTTPException(404, f"no self-play run {name!r} under {settings.runs_dir}")
        return match

    @app.get("/runs/{name}", response_class=HTMLResponse)
    def run_report(request: Request, name: str) -> HTMLResponse:
        run = run_folder(name)
        try:
            out = reports.folder(run)
        except ImportError:
            raise HTTPException(501, "drawing reports needs spade-trainer (pip install spade-ui[runs])") from None
        except SpadeError as exc:
            raise HTTPException(500, str(exc)) from None
        html = (out / "report.html").read_text(encoding="utf-8")
        # The run's name is the folder's: any text a file name may hold. In a URL it is
        # percent-encoded, so it can neither end the attribute nor change the path.
        html = html.replace('src="', f'src="/runs/{quote(name, safe="")}/files/')
        live = time.time() - (run / "metrics.jsonl").stat().st_mtime < LIVE_WITHIN_S
        banner = ('<p style="background:#fff4d6;padding:.4em"><b>live</b>: this run is still writing; '
                  'the page refreshes every 15 s</p>') if live else ""
        refresh = '<meta http-equiv="refresh" content="15">' if live else ""
        nav = '<p><a href="/">registry</a> &middot; <a href="/runs">runs</a></p>'
        html = html.replace("<head>", f"<head>{refresh}", 1).replace("<body>", f"<body>{nav}{banner}", 1)
        return HTMLResponse(html)

    @app.get("/runs/{name}/files/{file}")
    def run_file(name: str, file: str) -> FileResponse:
        out = reports.folder(run_folder(name))
        path = (out / file).resolve()
        if path.parent != out.resolve() or not path.is_file() or path.suffix != ".png":
            raise HTTPException(404, f"no plot {file!r} in the report of {name}")
        return FileResponse(path, media_type="image/png")

    # Outermost last: Host, Origin and body type (spade_serve.access) for pages and the
    # player alike, then the token when the ui has one.
    if settings.token is not None:
        app.add_middleware(TokenGate, token=settings.token, port=settings.port)
    from spade_serve.access import AccessGuard, AccessRules

    app.add_middleware(AccessGuard, rules=AccessRules.of(settings.serve_settings()))
    return app


__all__ = ["UiSettings", "cookie_name", "create_ui_app", "filter_rows", "ui_uvicorn_config"]
