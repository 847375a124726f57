"""What every page of the ui reads (:class:`UiState`, one per app at ``app.state.ui``) and
how a page is drawn (:meth:`UiState.page`: a Jinja2 template of ``templates/``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from spade_core.app.catalog import Catalog

from .settings import UiSettings

if TYPE_CHECKING:
    from .reports import Reports

#: The templates of every page.
TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


@dataclass(frozen=True)
class UiState:
    """The ui's catalog (the store read-only, the plugins' seeds), settings and run reports,
    and whether playing is offered (``play_off``: why not)."""

    catalog: Catalog
    settings: UiSettings
    reports: Reports
    play_off: str | None

    @property
    def play(self) -> bool:
        return self.play_off is None

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        return TEMPLATES.TemplateResponse(request, name, {"play": self.play, "play_off": self.play_off, **context},
                                          status_code=status_code)


def ui_of(request: Request) -> UiState:
    """The :class:`UiState` of the app a request reached."""
    state: UiState = request.app.state.ui
    return state


__all__ = ["TEMPLATES", "UiState", "ui_of"]
