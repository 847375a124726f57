"""The runs' pages: ``/runs`` (self-play run folders, newest first, a run written to lately
marked live) and ``/runs/{name}`` (its report, :class:`~spade_ui.reports.Reports`, with its
plots; the page refreshes itself while the run is still writing)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from spade_core.app.jsonl import read_jsonl
from spade_core.errors import SpadeError

from .pages import ui_of
from .settings import UiSettings

#: A run whose metrics changed this recently is taken as still running (its page refreshes).
LIVE_WITHIN_S = 120.0


def run_folders(settings: UiSettings) -> list[Path]:
    """The run folders under ``runs_dir`` (those holding a ``metrics.jsonl``), newest first."""
    root = settings.runs_dir
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if (p / "metrics.jsonl").is_file()),
                  key=lambda p: (p / "metrics.jsonl").stat().st_mtime, reverse=True)


def runs(request: Request) -> HTMLResponse:
    ui = ui_of(request)
    now = time.time()
    listed = []
    for run in run_folders(ui.settings):
        records = read_jsonl(run / "metrics.jsonl")
        listed.append({"name": run.name, "iterations": len(records), "last": records[-1] if records else {},
                       "live": now - (run / "metrics.jsonl").stat().st_mtime < LIVE_WITHIN_S})
    return ui.page(request, "runs.html", runs=listed, runs_dir=str(ui.settings.runs_dir))


def run_folder(settings: UiSettings, name: str) -> Path:
    match = next((p for p in run_folders(settings) if p.name == name), None)
    if match is None:
        raise HTTPException(404, f"no self-play run {name!r} under {settings.runs_dir}")
    return match


def run_report(request: Request, name: str) -> HTMLResponse:
    ui = ui_of(request)
    run = run_folder(ui.settings, name)
    try:
        out = ui.reports.folder(run)
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


def run_file(request: Request, name: str, file: str) -> FileResponse:
    ui = ui_of(request)
    out = ui.reports.folder(run_folder(ui.settings, name))
    path = (out / file).resolve()
    if path.parent != out.resolve() or not path.is_file() or path.suffix != ".png":
        raise HTTPException(404, f"no plot {file!r} in the report of {name}")
    return FileResponse(path, media_type="image/png")


def register(app: FastAPI) -> None:
    app.add_api_route("/runs", runs, methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/runs/{name}", run_report, methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/runs/{name}/files/{file}", run_file, methods=["GET"])


__all__ = ["LIVE_WITHIN_S", "register"]
