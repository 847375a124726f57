"""The ``spade`` command. Commands come from plugins through ``spade_register_commands``."""

from __future__ import annotations

import sys

import typer

from .errors import SpadeError


def build_app() -> typer.Typer:
    from .plugins import get_plugins

    app = typer.Typer(
        name="spade",
        help="SPADE: self-play environment design — registry, sandbox, designer, trainer.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    get_plugins().pm.hook.spade_register_commands(cli=app)
    return app


def main(argv: list[str] | None = None) -> None:
    try:
        app = build_app()
        app(args=argv, prog_name="spade", standalone_mode=True)
    except SpadeError as exc:
        from rich.console import Console

        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
