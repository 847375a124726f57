"""The ``spade ui`` command, added through ``spade_register_commands``."""

from __future__ import annotations

from pathlib import Path

import typer
from spade_core.hookspecs import hookimpl


@hookimpl
def spade_register_commands(cli: typer.Typer) -> None:
    @cli.command("ui")
    def ui(
        ctx: typer.Context,
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
        port: int = typer.Option(8100, "--port", min=0, max=65535),
        runs: Path = typer.Option(Path("runs"), "--runs", help="Folder holding self-play run folders."),
        play: bool = typer.Option(True, "--play/--no-play", help="Offer playing environments (sandboxed sessions)."),
        token_file: Path | None = typer.Option(
            None, "--token-file", help="File holding a token every page and the player then need (docs/ui.md)."
        ),
        allow_host: list[str] = typer.Option(
            None, "--allow-host", metavar="NAME[:PORT]", help="A Host name to answer besides the listen address (repeatable)."
        ),
        allow_origin: list[str] = typer.Option(
            None, "--allow-origin", metavar="URL", help="A web origin whose pages may call the ui (repeatable)."
        ),
        trust_forwarded: list[str] = typer.Option(
            None, "--trust-forwarded", metavar="ADDR", help="A proxy address whose X-Forwarded-For names the client (repeatable)."
        ),
    ) -> None:
        """Browse the registry and self-play runs in a web page (read-only)."""
        import uvicorn
        from rich.console import Console
        from spade_core.app.cli import command_config, command_plugins
        from spade_core.errors import SpadeError

        from .app import UiSettings, create_ui_app, ui_uvicorn_config

        token = None
        if token_file is not None:
            try:
                token = token_file.read_text().strip()
            except OSError as exc:
                raise SpadeError(f"{token_file}: cannot read the token file ({exc.strerror})") from None
        try:
            settings = UiSettings(
                host=host, port=port, runs_dir=runs, play=play, token=token, allow_hosts=tuple(allow_host or ()),
                allow_origins=tuple(allow_origin or ()), trust_forwarded=tuple(trust_forwarded or ()),
            )
            settings.serve_settings()  # checks the token, the names and the addresses
        except ValueError as exc:
            raise SpadeError(f"invalid ui settings: {exc}") from None
        app = create_ui_app(command_config(ctx), command_plugins(ctx), settings)
        console = Console(stderr=True, highlight=False)
        if not settings.loopback_only:
            console.print(f"[yellow]listening on {host}: anyone who reaches it can read the registry"
                          + ("" if token else " (no --token-file)") + "[/]")
        off = settings.play_off()
        if off is not None and play:
            console.print(f"[yellow]playing is off: {off}[/]")
        login = "?token=<the token of --token-file> (once; the browser keeps it)" if token else ""
        console.print(f"SPADE ui on http://{host}:{port}/{login} (Ctrl-C stops it)")
        uvicorn.Server(ui_uvicorn_config(app, settings)).run()
