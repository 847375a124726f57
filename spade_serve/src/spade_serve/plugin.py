"""spade_serve's hook implementations: the ``spade serve`` command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_core.hookspecs import hookimpl

if TYPE_CHECKING:
    import typer


@hookimpl
def spade_register_commands(cli: typer.Typer) -> None:
    from .cli import register

    register(cli)
