"""Without a terminal (a pipe, a file, CI's log), ``spade list`` and ``spade plugins`` print
each row of their tables whole on one line at the table's natural width; rich folded them
at 80 columns before, cutting ids and hook lists in two."""

from __future__ import annotations

from spade_core.app.cli import build_app
from spade_core.plugins import SpadePlugins
from typer.testing import CliRunner


def piped(*args: str) -> str:
    result = CliRunner().invoke(build_app(SpadePlugins()), list(args), env={"COLUMNS": None, "LINES": None})
    assert result.exit_code == 0, result.output
    return result.stdout


def rows(table: str) -> list[str]:
    return [line for line in table.splitlines() if line.startswith("│")]


def test_spade_plugins_prints_whole_rows_when_piped() -> None:
    lines = rows(piped("plugins"))
    builtin = next(line for line in lines if "spade_core.app.builtin" in line)
    assert "register_commands" in builtin  # its hooks, on its own line
    assert len(lines) == len(SpadePlugins().infos)  # one line a plugin: nothing folded
    assert max(map(len, lines)) > 80


def test_spade_list_shows_every_column_on_one_line_per_environment_when_piped() -> None:
    table = piped("list", "--domain", "tooluse")
    header = next(line for line in table.splitlines() if line.startswith("┃"))
    for column in ("id", "skill", "turns", "win rate", "regret", "description"):
        assert column in header, column
    lines = rows(table)
    seeds = SpadePlugins().domain("tooluse").seed_envs
    assert len(lines) == len(seeds) and all(f"{seed.name}-v1" in " ".join(lines) for seed in seeds)
