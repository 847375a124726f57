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
    ) -> None:
        """Browse the registry and self-play runs in a web page (read-only)."""
        import uvicorn
        from rich.console import Console
        from spade_core.cli import command_config, command_plugins

        from .app import UiSettings, create_ui_app

        settings = UiSettings(host=host, port=port, runs_dir=runs, play=play)
        app = create_ui_app(command_config(ctx), command_plugins(ctx), settings)
        if host not in ("127.0.0.1", "localhost", "::1"):
            Console(stderr=True).print(f"[yellow]listening on {host}: anyone who reaches it can read the registry[/]")
        Console(stderr=True, highlight=False).print(f"SPADE ui on http://{host}:{port}/ (Ctrl-C stops it)")
        uvicorn.run(app, host=host, port=port, log_level="warning")
