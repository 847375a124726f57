"""``spade list``, ``show``, ``play``, ``plugins``, ``--config`` and the error contract
(one red line, exit code 2, never a traceback)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from spade_core.app.cli import main
from spade_core.domains import Domain, SeedEnv
from spade_core.hookspecs import hookimpl
from spade_core.metadata import EnvMetadata, StatsSnapshot, ValidationReport
from spade_core.plugins import SpadePlugins

from .cli_support import open_store, spade
from .conftest import REFERENCE_ENVS, reference_class


def import_fixtures(*extra: str) -> None:
    run = spade("import", str(REFERENCE_ENVS), "--domain", "games", *extra)
    assert run.exit_code == 0, run.output


class PuzzlePlugin:
    """A plugin shipping one seed env (the Tower of Hanoi fixture) in domain 'puzzles'."""

    @hookimpl
    def spade_register_domains(self, register):  # type: ignore[no-untyped-def]
        register(
            Domain(
                name="puzzles",
                description="test puzzles",
                skills=("planning",),
                prompt_spec="-",
                seed_envs=(
                    SeedEnv(name="hanoi_seed", skill="planning", path=REFERENCE_ENVS / "tower_of_hanoi.py", max_turns=9),
                ),
            )
        )


@pytest.fixture
def puzzle_plugins() -> SpadePlugins:
    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(PuzzlePlugin(), name="puzzles")
    return plugins


# --- list ---------------------------------------------------------------------------------


def test_list_shows_store_and_seed_envs_marked_as_such(spade_home: Path, puzzle_plugins: SpadePlugins) -> None:
    import_fixtures()
    rows = json.loads(spade("list", "--json", plugins=puzzle_plugins).stdout)
    kinds = {r["id"]: r["kind"] for r in rows}
    assert kinds == {
        "hanoi_seed-v1": "seed",
        "GuessNumber-v1": "store",
        "LightSwitches-v1": "store",
        "SwapSort-v1": "store",
        "TowerOfHanoi-v1": "store",
    }
    seed = next(r for r in rows if r["kind"] == "seed")
    assert (seed["domain"], seed["skill"], seed["status"], seed["max_turns"]) == ("puzzles", "planning", "admitted", 9)

    table = spade("list", plugins=puzzle_plugins).stdout
    assert "1 seed + 4 store environments" in table
    for env_id in kinds:
        assert env_id in table


def test_list_filters_by_status_domain_and_skill(spade_home: Path, puzzle_plugins: SpadePlugins) -> None:
    import_fixtures()
    spade("import", str(REFERENCE_ENVS / "swap_sort.py"), "--domain", "games", "--status", "admitted")

    def ids(*args: str) -> set[str]:
        return {r["id"] for r in json.loads(spade("list", "--json", *args, plugins=puzzle_plugins).stdout)}

    assert ids("--status", "candidate") == {"GuessNumber-v1", "LightSwitches-v1", "TowerOfHanoi-v1"}
    assert ids("--status", "admitted") == {"SwapSort-v1", "hanoi_seed-v1"}, "seeds count as admitted"
    assert ids("--domain", "puzzles") == {"hanoi_seed-v1"}
    assert ids("--skill", "general", "--domain", "games") == {
        "GuessNumber-v1", "LightSwitches-v1", "SwapSort-v1", "TowerOfHanoi-v1"
    }


def test_list_limit_says_how_many_more_exist(spade_home: Path, puzzle_plugins: SpadePlugins) -> None:
    import_fixtures()
    run = spade("list", "--limit", "2", plugins=puzzle_plugins)
    assert "showing 2 of 4 store environments" in run.stdout


def test_list_rejects_an_unknown_status_with_the_choices(spade_home: Path) -> None:
    run = spade("list", "--status", "published")
    assert run.exit_code == 2
    assert "candidate" in run.output and "admitted" in run.output


# --- show ---------------------------------------------------------------------------------


def test_show_has_metadata_validation_stats_and_lineage(spade_home: Path) -> None:
    import_fixtures()
    with open_store() as store:
        store.record_stats("SwapSort-v1", StatsSnapshot(policy_snapshot="step-8", samples=16, win_rate=0.25, regret=0.125))
        store.set_validation("SwapSort-v1", ValidationReport(passed=False, failed_stage="fuzz", reasons=["crashed on ''"]))
        store.add(
            (REFERENCE_ENVS / "swap_sort.py").read_text().replace("size=5", "size=9"),
            EnvMetadata(name="SwapSortHuge", domain="games", skill="sorting", parent_ids=["SwapSort-v1"]),
        )
    run = spade("show", "SwapSort-v1")
    assert run.exit_code == 0, run.output
    out = run.stdout
    for expected in ("spade/SwapSort-v1", "store (sandboxed)", "SwapSortEnv", "failed at stage fuzz",
                     "crashed on ''", "step-8", "0.25", "0.125", "descendants SwapSortHuge-v1"):
        assert expected in out, expected
    child = json.loads(spade("show", "spade/SwapSortHuge-v1", "--json").stdout)
    assert child["lineage"] == ["SwapSort-v1"]
    assert child["metadata"]["parent_ids"] == ["SwapSort-v1"]
    assert "source" not in child


def test_show_code_prints_the_source(spade_home: Path) -> None:
    import_fixtures()
    as_json = json.loads(spade("show", "TowerOfHanoi", "--code", "--json").stdout)
    assert as_json["source"] == (REFERENCE_ENVS / "tower_of_hanoi.py").read_text()
    assert as_json["metadata"]["id"] == "TowerOfHanoi-v1", "a bare name resolves to its latest version"
    text = spade("show", "TowerOfHanoi-v1", "--code").stdout
    assert "class TowerOfHanoiEnv" in text and "def solution(self)" in text


def test_show_a_seed_env(spade_home: Path, puzzle_plugins: SpadePlugins) -> None:
    shown = json.loads(spade("show", "hanoi_seed", "--json", plugins=puzzle_plugins).stdout)
    assert shown["kind"] == "seed"
    assert shown["metadata"]["code_hash"] == __import__("spade_core.metadata").metadata.code_hash(
        (REFERENCE_ENVS / "tower_of_hanoi.py").read_text()
    )


def test_show_an_unknown_id_is_one_red_line(spade_home: Path) -> None:
    run = spade("show", "Nope-v3")
    assert run.exit_code == 2
    assert run.stderr.strip().splitlines() == [
        "error: no environment 'Nope-v3' in the store or among the seed environments (`spade list` shows them)"
    ]
    assert run.stdout == ""


# --- read-only commands never create a store -------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("list",), id="list"),
        pytest.param(("list", "--json"), id="list-json"),
        pytest.param(("show", "hanoi_seed"), id="show-seed"),
        pytest.param(("show", "Nope-v1"), id="show-missing"),
        pytest.param(("play", "hanoi_seed", "--seed", "1"), id="play-seed"),
    ],
)
def test_read_only_commands_on_a_fresh_home_create_no_store(
    spade_home: Path, puzzle_plugins: SpadePlugins, args: tuple[str, ...]
) -> None:
    run = spade(*args, input=":quit\n", plugins=puzzle_plugins)
    assert run.exit_code in (0, 2), run.output  # show Nope-v1 is a not-found error, not a crash
    assert "Traceback" not in run.output
    assert list(spade_home.iterdir()) == []


def test_list_on_a_fresh_home_shows_the_seeds_and_an_empty_store(spade_home: Path, puzzle_plugins: SpadePlugins) -> None:
    run = spade("list", "--json", plugins=puzzle_plugins)
    assert run.exit_code == 0, run.output
    assert [row["id"] for row in json.loads(run.stdout)] == ["hanoi_seed-v1"]


def test_export_of_a_fresh_home_writes_an_empty_pool_and_creates_no_store(spade_home: Path, tmp_path: Path) -> None:
    run = spade("export", str(tmp_path / "out.jsonl"))
    assert run.exit_code == 0, run.output
    assert (tmp_path / "out.jsonl").read_text() == ""
    assert not (spade_home / "store.db").exists()


def test_a_configured_store_that_does_not_exist_is_an_error_naming_the_file(spade_home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "team" / "envs.db"
    (spade_home / "spade.toml").write_text(f'[spade]\nstore_url = "sqlite:///{missing}"\n')
    run = spade("list")
    assert run.exit_code == 2
    assert run.stderr.strip().splitlines() == [
        f"error: {missing}: store file does not exist (store_url = 'sqlite:///{missing}' in the configuration); "
        "check the path, or create the store with `spade import`"
    ]
    assert not missing.exists() and not missing.parent.exists()


def test_import_still_creates_the_default_store(spade_home: Path) -> None:
    import_fixtures()
    assert (spade_home / "store.db").exists()
    assert "store" in spade("list").stdout


# --- play ---------------------------------------------------------------------------------


def _solution(stem: str, seed: int) -> list[str]:
    env = reference_class(stem)()
    env.reset(seed=seed)
    return list(env.solution())


def test_play_a_store_env_in_process_to_full_reward(spade_home: Path) -> None:
    import_fixtures()
    actions = _solution("light_switches", 5)
    run = spade("play", "LightSwitches-v1", "--seed", "5", "--in-process", input="\n".join(actions) + "\n")
    assert run.exit_code == 0, run.output
    assert "running store code in this process" in run.stdout
    assert "episode start (seed 5)" in run.stdout
    assert "reward 1.000  terminated" in run.stdout
    assert "episode over after 2 turns: final reward 1.000" in run.stdout


def test_play_wraps_bare_actions_in_boxed_for_boxed_domains(spade_home: Path) -> None:
    import_fixtures()
    bare = [a.removeprefix("\\boxed{").removesuffix("}") for a in _solution("tower_of_hanoi", 0)]
    run = spade("play", "TowerOfHanoi-v1", "--in-process", input="\n".join(bare) + "\n")
    assert "turn 1: \\boxed{move A C}" in run.stdout
    assert "Solved!" in run.stdout and "final reward 1.000" in run.stdout


def test_play_commands_solution_reset_help_quit(spade_home: Path) -> None:
    import_fixtures()
    lines = [":help", "\\boxed{3}", ":solution", ":reset 9", ":bogus", ":reset x", ":quit", "never read"]
    run = spade("play", "GuessNumber-v1", "--seed", "4", "--in-process", input="\n".join(lines) + "\n")
    out = run.stdout
    assert run.exit_code == 0
    assert ":solution" in out and "reveal" in out, ":help lists the commands"
    assert "solution:\n  1. \\boxed{32}" in out
    assert "episode start (seed 9)" in out
    assert "unknown command ':bogus'" in out
    assert ":reset takes an integer seed, got 'x'" in out
    assert "never read" not in out
    assert out.rstrip().endswith("bye: 0 turns, final reward 0.000")


def test_play_refuses_actions_after_the_episode_ended(spade_home: Path) -> None:
    import_fixtures()
    actions = _solution("guess_number", 1)
    run = spade("play", "GuessNumber-v1", "--seed", "1", "--in-process", input="\n".join([*actions, "7"]) + "\n")
    assert "the episode is over: :reset to play again" in run.stdout


def test_play_truncates_at_max_turns(spade_home: Path) -> None:
    import_fixtures()
    with open_store() as store:
        store.add(
            (REFERENCE_ENVS / "tower_of_hanoi.py").read_text(),
            EnvMetadata(name="ShortHanoi", domain="games", skill="planning", max_turns=2),
        )
    run = spade("play", "ShortHanoi", "--in-process", input="move A B\nmove B A\n")
    assert "truncated (turn limit)" in run.stdout


def test_play_a_seed_env_in_process_without_flags(spade_home: Path, puzzle_plugins: SpadePlugins) -> None:
    actions = _solution("tower_of_hanoi", 0)
    run = spade("play", "hanoi_seed-v1", input="\n".join(actions) + "\n", plugins=puzzle_plugins)
    assert run.exit_code == 0, run.output
    assert "running store code" not in run.stdout
    assert "Solved!" in run.stdout


def test_play_store_code_through_the_sandbox_by_default(spade_home: Path) -> None:
    import_fixtures()
    actions = _solution("swap_sort", 3)
    run = spade("play", "SwapSort-v1", "--seed", "3", input="\n".join(actions) + "\n")
    assert run.exit_code == 0, run.output
    assert "running store code in this process" not in run.stdout
    assert "score 1.00" in run.stdout and "final reward 1.000" in run.stdout


def test_play_refuses_store_code_when_no_sandbox_is_available(
    spade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No loaded plugin provides the ``sandbox`` env runner (SPADE_PLUGINS leaves
    spade-sandbox out, as if it were not installed): play refuses to run store code."""
    from spade_core.plugins import reset_plugins

    import_fixtures()
    monkeypatch.setenv("SPADE_PLUGINS", "games")
    reset_plugins(None)
    try:
        run = spade("play", "SwapSort-v1", input="\\boxed{done}\n")
    finally:
        monkeypatch.delenv("SPADE_PLUGINS")
        reset_plugins(None)
    assert run.exit_code == 2
    assert "the sandbox is not available (no loaded plugin provides the 'sandbox' env runner" in run.stderr
    assert "refusing to run it in this process" in run.stderr


def test_config_in_process_setting_lets_store_code_run_in_process(
    spade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_fixtures()
    (spade_home / "spade.toml").write_text('[spade]\nstore_envs_run = "in-process"\n')
    monkeypatch.setitem(sys.modules, "spade_sandbox", None)
    run = spade("play", "SwapSort-v1", input="\\boxed{done}\n")
    assert run.exit_code == 0, run.output
    assert "running store code in this process" in run.stdout


# --- config and the error contract ----------------------------------------------------------


def test_a_bad_config_file_lists_every_bad_field(tmp_path: Path, spade_home: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[spade]\nstore_envs_run = "docker"\nstore_urll = "x"\n')
    run = spade("--config", str(bad), "list")
    assert run.exit_code == 2
    assert "spade.store_envs_run: Input should be 'sandbox' or 'in-process'" in run.stderr
    assert "spade.store_urll: Extra inputs are not permitted" in run.stderr
    assert "Traceback" not in run.output


def test_config_option_selects_the_store(tmp_path: Path, spade_home: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text(f'[spade]\nstore_url = "sqlite:///{tmp_path / "other.db"}"\n')
    assert spade("--config", str(other), "import", str(REFERENCE_ENVS / "swap_sort.py"), "--domain", "g").exit_code == 0
    assert (tmp_path / "other.db").exists()
    assert json.loads(spade("list", "--json", "--domain", "g").stdout) == [], "the default store is untouched"
    assert len(json.loads(spade("--config", str(other), "list", "--json", "--domain", "g").stdout)) == 1


def test_main_prints_one_red_line_and_exits_2(spade_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["show", "Missing-v1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no environment 'Missing-v1'")
    assert "Traceback" not in err


def test_main_reports_a_broken_config_before_any_command(
    tmp_path: Path, spade_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "spade.toml").write_text("[spade\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["list"])
    assert exit_info.value.code == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_a_plugin_whose_commands_fail_does_not_take_the_cli_down(
    spade_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class Broken:
        @hookimpl
        def spade_register_commands(self, cli):  # type: ignore[no-untyped-def]
            raise ImportError("No module named 'missing_dep'")

    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(Broken(), name="broken")
    run = spade("plugins", plugins=plugins)  # the app is built (and warns) before the runner starts
    assert run.exit_code == 0
    assert "broken" in run.stdout
    warning = capsys.readouterr().err
    assert "plugin 'broken' could not add its commands: ImportError: No module named 'missing_dep'" in warning


def test_main_loads_only_the_plugins_the_config_names(
    tmp_path: Path, spade_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spade_core.plugins import reset_plugins

    (tmp_path / "spade.toml").write_text("[spade]\nplugins = []\n")
    try:
        with pytest.raises(SystemExit) as exit_info:
            main(["plugins", "--json"])
        assert exit_info.value.code == 0
        names = [p["name"] for p in json.loads(capsys.readouterr().out)]
        assert names == ["spade_core.app.builtin"]
    finally:
        reset_plugins(None)  # the next get_plugins() loads the installed set again


def test_main_reports_an_unknown_plugin_selection(
    spade_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from spade_core.plugins import reset_plugins

    monkeypatch.setenv("SPADE_PLUGINS", "no_such_plugin")
    reset_plugins(None)
    try:
        with pytest.raises(SystemExit) as exit_info:
            main(["list"])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: SPADE_PLUGINS / config 'plugins' names plugin(s) that are not installed: no_such_plugin")
    finally:
        monkeypatch.delenv("SPADE_PLUGINS")
        reset_plugins(None)


FRAGILE_ENV = '''
class FragileEnv:
    """Breaks on purpose: step raises on 'boom', reset raises on seed 13."""

    def reset(self, seed=None):
        if seed == 13:
            raise ValueError("unlucky seed")
        return "say something", {}

    def step(self, action):
        if "boom" in action:
            raise ZeroDivisionError("division by zero")
        return "ok", 0.0, False, False, {}

    def solution(self):
        raise KeyError("no solution stored")
'''


def test_play_reports_env_code_errors_without_a_traceback(spade_home: Path) -> None:
    with open_store() as store:
        store.add(FRAGILE_ENV, EnvMetadata(name="Fragile", domain="games", skill="x"))
    run = spade("play", "Fragile", "--in-process", input="boom\n:solution\n:reset 13\nhello\n")
    assert run.exit_code == 0, run.output
    assert "the environment failed: ZeroDivisionError: division by zero" in run.stdout
    assert "solution() failed: KeyError: 'no solution stored'" in run.stdout
    assert "reset() raised ValueError: unlucky seed" in run.stdout
    assert "Traceback" not in run.output

    run = spade("play", "Fragile", "--in-process", "--seed", "13", input="")
    assert run.exit_code == 2
    assert run.stderr.startswith("error: reset() raised ValueError: unlucky seed")
