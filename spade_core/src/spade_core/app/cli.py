"""The ``spade`` command. Commands come from plugins through ``spade_register_commands``.

Every :class:`~spade_core.errors.SpadeError` a command raises ends the command with one
red ``error:`` message on stderr and exit code 2 — never a traceback. The global
``--config PATH`` option selects the configuration file (otherwise ``./spade.toml``, then
``$SPADE_HOME/spade.toml``); commands read it through :func:`command_config`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from ..config import SpadeConfig, load_config
from ..errors import SpadeError

if TYPE_CHECKING:
    from rich.console import Console

    from ..plugins import SpadePlugins

#: Exit code of a command stopped by a SpadeError (click uses 1 for aborts, 2 for usage).
ERROR_EXIT_CODE = 2


def report_error(exc: SpadeError) -> None:
    """Print ``exc`` as one red ``error:`` message on stderr (no traceback)."""
    from rich.console import Console

    from spade_core.terminal import escape

    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)


def tidy_help(command: Any, ctx: Any) -> None:
    """Make ``command``'s help (and its sub-commands', recursively) say what a user types.

    Switches (``--json``, ``--help``, ``--resume/--no-resume``) take no value, so they show
    no type (Typer prints ``<bool>`` for them); help texts are shown as written, brackets
    included (Typer's rich markup would swallow ``[selfplay]`` as a style tag). Idempotent.
    """
    if getattr(command, "_spade_tidy", False):
        return
    command._spade_tidy = True
    from spade_core.terminal import escape

    params = list(getattr(command, "params", ()))
    help_option = command.get_help_option(ctx) if hasattr(command, "get_help_option") else None
    if help_option is not None:
        params.append(help_option)
    for param in params:
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""
        if getattr(param, "help", None):
            param.help = escape(param.help)
    for attr in ("help", "short_help", "epilog"):
        text = getattr(command, attr, None)
        if text:
            setattr(command, attr, escape(text))
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub, ctx)


class SpadeGroup(TyperGroup):
    """The root command group: a SpadeError ends the command with :func:`report_error`
    and exit code 2, under ``spade`` and under a test runner alike. Help pages are tidied
    by :func:`tidy_help` before they are shown."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except SpadeError as exc:
            report_error(exc)
            raise typer.Exit(ERROR_EXIT_CODE) from None

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        # Before parsing: the help option answers during parsing, sub-commands' included.
        tidy_help(self, self.context_class(self, info_name=info_name, parent=parent, **extra))
        return super().make_context(info_name, args, parent=parent, **extra)


@dataclass
class CliState:
    """What the root callback hands every command (``ctx.obj``)."""

    config_path: Path | None = None
    #: The plugin set the app was built from (``None``: the process-wide one).
    plugins: SpadePlugins | None = None
    _config: SpadeConfig | None = field(default=None, repr=False)

    def config(self) -> SpadeConfig:
        """The configuration file loaded and every table checked by its owner, once."""
        if self._config is None:
            from ..plugins import get_plugins

            self._config = (self.plugins or get_plugins()).check_config(load_config(self.config_path))
        return self._config


def _state(ctx: typer.Context) -> CliState:
    state = ctx.find_object(CliState)
    if state is None:  # a command invoked outside the root group (embedding)
        state = CliState()
        ctx.obj = state
    return state


def command_config(ctx: typer.Context) -> SpadeConfig:
    """The validated configuration of this invocation (loaded on first use)."""
    return _state(ctx).config()


def command_plugins(ctx: typer.Context) -> SpadePlugins:
    """The plugin set whose commands are running."""
    from ..plugins import get_plugins

    return _state(ctx).plugins or get_plugins()


def command_console() -> Console:
    """The console a command prints to; created per call (CliRunner swaps ``sys.stdout``
    between invocations)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def echo_json(value: Any) -> None:
    """``value`` as indented JSON, printed as :func:`spade_core.terminal.terminal_json` makes
    it safe for a terminal (what a command's ``--json`` prints)."""
    import json

    from spade_core.terminal import terminal_json

    typer.echo(terminal_json(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


def build_app(plugins: SpadePlugins | None = None) -> typer.Typer:
    """The ``spade`` app with every plugin's commands (``plugins`` defaults to the process set)."""
    from ..plugins import get_plugins

    chosen = plugins or get_plugins()
    app = typer.Typer(
        name="spade",
        help="SPADE: self-play environment design — registry, sandbox, designer, trainer.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        cls=SpadeGroup,
    )

    @app.callback()
    def _root(
        ctx: typer.Context,
        config: Path | None = typer.Option(
            None, "--config", "-c", help="Configuration file (default: ./spade.toml, then $SPADE_HOME/spade.toml)."
        ),
    ) -> None:
        ctx.obj = CliState(config_path=config, plugins=chosen)

    _register_commands(chosen, app)
    return app


def _register_commands(plugins: SpadePlugins, app: typer.Typer) -> None:
    """Each plugin adds its commands; a third-party plugin that fails to is reported and
    skipped, so one broken plugin cannot take the whole ``spade`` command down with it."""
    from ..plugins import DEFAULT_PLUGINS

    for impl in plugins.pm.hook.spade_register_commands.get_hookimpls():
        if impl.plugin_name in DEFAULT_PLUGINS:
            impl.function(cli=app)
            continue
        try:
            impl.function(cli=app)
        except Exception as exc:
            from rich.console import Console

            from spade_core.terminal import escape

            Console(stderr=True, soft_wrap=True).print(
                f"[yellow]warning:[/] plugin {escape(impl.plugin_name)!r} could not add its commands: "
                f"{escape(type(exc).__name__)}: {escape(str(exc))}",
                highlight=False,
            )


def _config_path_from_argv(argv: list[str]) -> str | None:
    """``--config`` given before the sub-command; needed before the app exists because
    the config's ``plugins`` key decides which plugins (hence which commands) load."""
    for i, arg in enumerate(argv):
        if arg in ("--config", "-c") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
        if not arg.startswith("-"):
            return None  # the sub-command: options after it are its own
    return None


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        from ..plugins import SpadePlugins, reset_plugins

        config = load_config(_config_path_from_argv(args))
        if config.plugins is not None:
            reset_plugins(SpadePlugins(only=config.plugins))
        app = build_app()
    except SpadeError as exc:
        report_error(exc)
        sys.exit(ERROR_EXIT_CODE)
    app(args=args, prog_name="spade", standalone_mode=True)


if __name__ == "__main__":  # pragma: no cover
    # ``python -m spade_core.app.cli`` runs this file as ``__main__``: the app must be built from
    # the package's module, whose CliState the plugins' commands look up (with this module's,
    # they found none and loaded the active file instead of ``--config FILE``).
    from spade_core.app.cli import main as package_main

    package_main()
