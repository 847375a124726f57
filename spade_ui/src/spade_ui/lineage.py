"""An environment's lineage as an SVG graph: the grounding document, its parents, the
environment, its children, left to right, each node a link to its page."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import quote

NODE_W, NODE_H, GAP_X, GAP_Y = 210, 34, 60, 14


def env_href(env_id: str) -> str:
    """The page of ``env_id``: its id percent-encoded as a path (``/`` kept: the route takes paths)."""
    return "/env/" + quote(env_id, safe="/")


def _node(x: int, y: int, label: str, sub: str, href: str | None, cls: str) -> str:
    text = (f'<text x="{x + 8}" y="{y + 14}" class="label">{escape(label[:30])}</text>'
            f'<text x="{x + 8}" y="{y + 28}" class="sub">{escape(sub[:34])}</text>')
    box = f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="5" class="{cls}"/>'
    inner = box + text
    return f'<a href="{escape(href)}">{inner}</a>' if href else inner


def lineage_svg(m: Any, parents: Sequence[Any], children: Sequence[Any], missing_parents: Sequence[str] = ()) -> str:
    """SVG markup of ``m``'s lineage (``parents`` and ``children`` are metadata in the
    store; ``missing_parents`` are parent ids the store does not hold)."""
    columns: list[list[tuple[str, str, str | None, str]]] = []
    if m.document is not None:
        d = m.document
        columns.append([(d.title or d.doc_id, f"document of {d.corpus}", None, "doc")])
    ups: list[tuple[str, str, str | None, str]] = [(p.id, f"parent · {p.skill}", env_href(p.id), "parent") for p in parents]
    ups += [(pid, "parent (not in this store)", None, "missing") for pid in missing_parents]
    if ups:
        columns.append(ups)
    how = "edited" if getattr(m, "edit", None) is not None else m.status.value
    columns.append([(m.id, f"this environment · {how}", None, "self")])
    if children:
        columns.append([(c.id, f"child · {c.status.value}", env_href(c.id), "child") for c in children[:12]])
    rows = max(len(c) for c in columns)
    height = rows * (NODE_H + GAP_Y) + GAP_Y
    width = len(columns) * (NODE_W + GAP_X)
    centres: list[list[tuple[int, int]]] = []
    parts: list[str] = []
    for ci, column in enumerate(columns):
        x = ci * (NODE_W + GAP_X) + 4
        top = (height - len(column) * (NODE_H + GAP_Y)) // 2 + GAP_Y // 2
        placed = []
        for ri, (label, sub, href, cls) in enumerate(column):
            y = top + ri * (NODE_H + GAP_Y)
            parts.append(_node(x, y, label, sub, href, cls))
            placed.append((x, y))
        centres.append(placed)
    edges = []
    for ci in range(1, len(columns)):
        for (x0, y0) in centres[ci - 1]:
            for (x1, y1) in centres[ci]:
                if len(centres[ci - 1]) > 1 and len(centres[ci]) > 1:
                    continue  # parents -> children pass through the environment itself
                edges.append(f'<line x1="{x0 + NODE_W}" y1="{y0 + NODE_H // 2}" x2="{x1}" y2="{y1 + NODE_H // 2}" '
                             'class="edge" marker-end="url(#arrow)"/>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lineage" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="lineage of {escape(m.id)}">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#888"/></marker></defs>'
        + "".join(edges) + "".join(parts) + "</svg>"
    )
