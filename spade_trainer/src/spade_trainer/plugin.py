"""spade_trainer's plugin: the ``spade selfplay`` and ``spade report`` commands.

Kept light: plugin modules are imported at ``import spade_core`` (registration), so the
commands module (and typer) loads only when the CLI is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spade_core.hookspecs import hookimpl

if TYPE_CHECKING:
    import typer


@hookimpl
def spade_register_commands(cli: typer.Typer) -> None:
    from .commands import register

    register(cli)


@hookimpl
def spade_register_config_sections(register: Any) -> None:
    """``[selfplay]`` of ``spade.toml`` (``spade selfplay --config FILE`` lays it over its presets)."""
    register("selfplay", "spade_trainer.config:SelfPlayConfig")
