"""``spade plugins`` (what is loaded) and ``spade plugins --check`` (what it got wrong).

A plugin is checked when its domains are first listed (:meth:`SpadePlugins.problems
<spade_core.plugins.SpadePlugins.problems>`): every seed's metadata, file, class, skill and
name. ``--check`` prints each problem in one line and exits 1 when there is any, so a
plugin's CI can run it; ``spade list`` prints the same lines as warnings under its table.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from ..terminal import escape, print_whole, terminal_json
from .cli import command_plugins

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..plugin_checks import PluginProblem


def warn_problems(problems: Sequence[PluginProblem]) -> None:
    """Print plugin problems on stderr, one line each (nothing when none)."""
    if not problems:
        return
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    console.print(f"[yellow]warning:[/] {len(problems)} problem(s) in installed plugins; what they name is not "
                  "registered (`spade plugins --check`):")
    for problem in problems:
        console.print(f"  {escape(str(problem))}")


def plugins(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    check: bool = typer.Option(
        False, "--check",
        help="Check what every plugin registers (each seed's metadata, file, class, skill and name); print each "
             "problem in one line and exit 1 when there is any (for CI).",
    ),
) -> None:
    """List loaded plugins: distribution, version, hooks and the domains they register."""
    ps = command_plugins(ctx)
    domains = ps.domains()  # fills each plugin's domain list
    problems = ps.problems()
    if check:
        seeds = sum(len(d.seed_envs) for d in domains.values())
        if as_json:
            typer.echo(terminal_json(json.dumps({"plugins": len(ps.infos), "domains": len(domains), "seeds": seeds,
                                                 "problems": [p.to_json() for p in problems]}, indent=2)))
        else:
            console = Console(highlight=False, soft_wrap=True)
            verdict = "[red]problems[/]" if problems else "[green]ok[/]"
            console.print(f"{verdict}: {len(ps.infos)} plugins, {len(domains)} domains, {seeds} seed environments "
                          f"registered; {len(problems)} problem(s)")
            for problem in problems:
                console.print(f"  {escape(str(problem))}")
        if problems:
            raise typer.Exit(1)
        return
    if as_json:
        typer.echo(terminal_json(json.dumps([dataclasses.asdict(i) for i in ps.infos], indent=2, ensure_ascii=False)))
        return
    table = Table(title=f"{len(ps.infos)} plugins", title_justify="left")
    for col in ("name", "distribution", "version", "builtin", "hooks", "domains"):
        table.add_column(col, overflow="fold")
    for i in ps.infos:
        table.add_row(
            escape(i.name),
            escape(i.distribution or "-"),
            escape(i.version or "-"),
            "yes" if i.builtin else "",
            escape(", ".join(h.removeprefix("spade_") for h in i.hooks) or "-"),
            escape(", ".join(i.domains) or "-"),
        )
    print_whole(Console(highlight=False, soft_wrap=False), table)
    warn_problems(problems)
