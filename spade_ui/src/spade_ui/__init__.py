"""SPADE ui: ``spade ui`` serves a page over the registry (browse, search, read an
environment's code, report, stats, lineage and hint, play it in a sandboxed session) and
over self-play run folders (their reports, refreshed while a run is going).

Read-only: the page never writes to the store or into a run folder.
"""

from .app import UiSettings, create_ui_app

__all__ = ["UiSettings", "create_ui_app"]
