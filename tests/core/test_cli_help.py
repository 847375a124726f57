"""Help pages say what a user types: switches show no value type, a value option shows
its type, and help text keeps its brackets (``[selfplay]`` is a TOML table, not markup)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from spade_core.app.cli import build_app
from typer.main import get_command
from typer.testing import CliRunner


def _command_paths(command: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*prefix, name))


def _help(*path: str) -> str:
    result = CliRunner().invoke(build_app(), [*path, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result.output


def test_no_help_page_shows_a_type_for_a_switch() -> None:
    paths = list(_command_paths(get_command(build_app())))
    assert len(paths) > 10  # every built-in command and sub-command is looked at
    shown = [" ".join(path) or "spade" for path in paths if "<bool>" in _help(*path)]
    assert shown == []


def test_a_value_option_still_shows_its_type() -> None:
    page = _help("list")
    assert "<int" in page  # --limit
    assert "<str>" in page  # --domain


def test_help_text_keeps_its_brackets() -> None:
    assert "[selfplay]" in _help("selfplay")


def test_a_switch_still_works_after_its_help_was_tidied() -> None:
    app = build_app()
    CliRunner().invoke(app, ["list", "--help"])
    result = CliRunner().invoke(app, ["list", "--json", "--limit", "1"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert result.output.lstrip().startswith("[")


@pytest.mark.parametrize("columns", [60, 80, 100, 120, 140, 200])
def test_list_keeps_ids_skills_and_statuses_whole_at_any_width(columns: int) -> None:
    result = CliRunner().invoke(build_app(), ["list"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    rows = json.loads(CliRunner().invoke(build_app(), ["list", "--json"]).output)
    lines = result.output.splitlines()
    for row in rows:
        line = next((line for line in lines if f" {row['id']} " in line), None)
        assert line is not None, f"{row['id']} is cut at {columns} columns"
        if columns >= 100:  # room for every skill and status on the row itself
            assert f" {row['skill']} " in line and f" {row['status']} " in line, line
    if columns >= 120:
        assert "regret" in result.output


def test_seed_specs_carry_their_turn_limit() -> None:
    import gymnasium as gym
    from spade_core.plugins import get_plugins

    import spade_core

    gym.register_envs(spade_core)
    for domain in get_plugins().domains().values():
        for seed in domain.seed_envs:
            assert gym.spec(seed.gym_id).max_episode_steps == seed.max_turns, seed.gym_id
