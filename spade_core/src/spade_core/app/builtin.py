"""SPADE core's own plugin: the core CLI commands, registered through the public hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    import typer


@hookimpl
def spade_register_commands(cli: typer.Typer) -> None:
    from . import commands, plugin_template

    commands.register(cli)
    plugin_template.register(cli)
