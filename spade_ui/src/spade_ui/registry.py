"""The registry's pages: ``/`` (store and seed environments, searched, filtered and sorted:
:func:`filter_rows`) and ``/env/{id}`` (one environment: its code, metadata, validation
report, lineage, hint and player)."""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse
from spade_core.app.catalog import CatalogEntry
from spade_core.errors import EnvNotFound, SpadeError

from .lineage import lineage_svg
from .pages import ui_of

SORTS = ("id", "regret", "win_rate", "turns", "created")


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


def registry(
    request: Request, q: str = "", domain: str = "", skill: str = "", status: str = "",
    regret_min: str | None = None, regret_max: str | None = None,
    win_min: str | None = None, win_max: str | None = None, sort: str = "id",
) -> HTMLResponse:
    if sort not in SORTS:
        raise HTTPException(400, f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
    ui = ui_of(request)
    rows = [_row(e) for e in ui.catalog.seeds() + ui.catalog.stored(limit=ui.settings.max_listed)]
    shown = filter_rows(
        rows, q=q, domain=domain, skill=skill, status=status,
        regret_min=_num(regret_min, "regret_min"), regret_max=_num(regret_max, "regret_max"),
        win_min=_num(win_min, "win_min"), win_max=_num(win_max, "win_max"), sort=sort,
    )
    form = {"q": q, "domain": domain, "skill": skill, "status": status, "regret_min": regret_min or "",
            "regret_max": regret_max or "", "win_min": win_min or "", "win_max": win_max or "", "sort": sort}
    return ui.page(
        request, "registry.html", rows=shown, total=len(rows), form=form, sorts=SORTS,
        domains=sorted({r["domain"] for r in rows}), skills=sorted({r["skill"] for r in rows}),
        statuses=["admitted", "candidate", "retired"],
    )


def environment(request: Request, env_id: str) -> HTMLResponse:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    ui = ui_of(request)
    catalog = ui.catalog
    try:
        entry = catalog.resolve(env_id)
        source = catalog.source(entry)
    except EnvNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except SpadeError as exc:
        raise HTTPException(500, str(exc)) from None
    m = entry.metadata
    formatter = HtmlFormatter(linenos="inline", cssclass="highlight")
    parents: list[Any] = []
    children: list[Any] = []
    if entry.kind == "store":
        parents = [p for p in catalog.store.lineage(m.id) if p.id in m.parent_ids]
        children = [c for c in catalog.store.descendants(m.id) if m.id in c.parent_ids]
    missing_parents = [p for p in m.parent_ids if p not in {x.id for x in parents}]
    findings = m.validation.findings if m.validation is not None else []
    return ui.page(
        request, "env.html", entry=entry, m=m, code=highlight(source, PythonLexer(), formatter),
        code_css=formatter.get_style_defs(".highlight"), findings=findings,
        lineage=lineage_svg(m, parents, children, missing_parents),
        metadata_json=json.dumps(
            m.model_dump(mode="json", exclude={"validation", "stats"}), indent=2, ensure_ascii=False
        ),
        playable=ui.play and (entry.kind == "seed" or m.status.value == "admitted"),
    )


def register(app: FastAPI) -> None:
    app.add_api_route("/", registry, methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/env/{env_id:path}", environment, methods=["GET"], response_class=HTMLResponse)


__all__ = ["SORTS", "filter_rows", "register"]
