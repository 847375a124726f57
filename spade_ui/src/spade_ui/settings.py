"""Where ``spade ui`` listens and what it offers (:class:`UiSettings`), built once by the
command and passed down."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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


__all__ = ["UiSettings"]
