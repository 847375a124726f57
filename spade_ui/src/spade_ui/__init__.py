"""SPADE ui: ``spade ui`` serves a page over the registry (browse, search, read an
environment's code, report, stats, lineage and hint, play it in a sandboxed session) and
over self-play run folders (their reports, refreshed while a run is going).

Read-only: the page never writes to the store or into a run folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import UiSettings, create_ui_app, ui_uvicorn_config

__all__ = ["UiSettings", "create_ui_app", "ui_uvicorn_config"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the plugin module (spade_ui.plugin) is imported with every
    # plugin set, and ``import spade_core`` must not pay for FastAPI and pydantic.
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
