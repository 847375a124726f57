"""A plugin is checked when it loads: a plugin kept outside the project (``regex_plugin``,
installed as real distributions in a temporary folder) with every seed mistake an author
makes. Each is reported in one line naming the plugin, the seed, the field, the value and
what is allowed, by ``spade list`` and ``spade plugins --check`` alike, without a
traceback; the other seeds and plugins keep working; ``gymnasium.make`` of a bad seed says
why it is missing; a name two seeds take is refused for both."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from spade_core.plugins import SpadePlugins

from . import regex_plugin
from .cli_support import spade


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The two plugins installed under a folder on ``sys.path`` (and ``PYTHONPATH`` for
    subprocesses), selected with the project's own plugins."""
    folder = tmp_path / "site"
    folder.mkdir()
    regex_plugin.install(folder)
    # after the script's own folder, as an installed path is (a worker's module path skips sys.path[0])
    monkeypatch.setattr(sys, "path", [sys.path[0], str(folder), *sys.path[1:]])
    importlib.invalidate_caches()
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name.startswith(("tmp_spade_regex", "tmp_spade_other")):
            del sys.modules[name]


def run_spade(
    site: Path, home: Path, *args: str, code: str | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The real ``spade`` (or ``python -c code``) in a fresh interpreter that finds the
    plugins through ``PYTHONPATH``, with every installed plugin loaded, in ``home`` (its
    ``SPADE_HOME`` and working folder)."""
    env = {k: v for k, v in os.environ.items() if k != "SPADE_PLUGINS"}
    env.update(SPADE_HOME=str(home), PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]))
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "spade_core.app.cli", *args]
    return subprocess.run(command, env=env, cwd=home, input=stdin, capture_output=True, text=True, timeout=300)


def assert_every_mistake_named(output: str) -> None:
    for plugin, domain, seed, text in regex_plugin.EXPECTED:
        where = f"plugin {plugin!r}, domain {domain!r}" + (f", seed {seed!r}" if seed is not None else "")
        assert any(line.strip().startswith(where) and text in line for line in output.splitlines()), (where, text)
    assert "Traceback" not in output


def test_each_seed_mistake_is_one_problem_and_the_rest_registers(site: Path) -> None:
    plugins = SpadePlugins()
    problems = plugins.problems()
    assert len(problems) == len(regex_plugin.EXPECTED)
    assert all("\n" not in str(problem) for problem in problems)
    assert_every_mistake_named("\n".join(map(str, problems)))
    domains = plugins.domains()
    registered = {s.name for d in domains.values() for s in d.seed_envs}
    assert registered >= regex_plugin.GOOD | {"code_breaker"}, "the other seeds and plugins keep working"
    assert not registered & {seed for _, _, seed, _ in regex_plugin.EXPECTED}
    assert "regex_fmt" not in domains  # its action format is misspelt: the domain is left out
    match = domains["regexes"].seed("regex_match")
    assert match.hint == "Test one word at a time."
    # a refused seed that has a valid id is refused under it
    by_seed = {p.seed: p for p in problems}
    assert by_seed["regex_hard"].gym_id == "spade/regex_hard-v1"
    assert by_seed["regex match!"].gym_id is None  # no Gymnasium id to refuse it under


def test_spade_list_and_plugins_check_name_every_mistake(site: Path) -> None:
    plugins = SpadePlugins()
    listed = spade("list", "--domain", "regexes", plugins=plugins)
    assert listed.exit_code == 0, listed.output
    assert {"regex_match-v1", "regex_bad_reward-v1", "regex_hang-v1"} <= set(listed.stdout.split())
    assert_every_mistake_named(listed.stderr)

    checked = spade("plugins", "--check", plugins=plugins)
    assert checked.exit_code == 1, checked.output
    assert checked.stdout.startswith("problems: ") and f"{len(regex_plugin.EXPECTED)} problem(s)" in checked.stdout
    assert_every_mistake_named(checked.stdout)

    report = json.loads(spade("plugins", "--check", "--json", plugins=plugins).stdout)
    assert {(p["plugin"], p["domain"], p["seed"]) for p in report["problems"]} == {
        (plugin, domain, seed) for plugin, domain, seed, _ in regex_plugin.EXPECTED
    }


def test_a_plugin_set_without_problems_passes_the_check() -> None:
    plugins = SpadePlugins()  # the project's own plugins
    checked = spade("plugins", "--check", plugins=plugins)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.startswith("ok: ") and "0 problem(s)" in checked.stdout


@pytest.mark.slow
def test_the_real_command_line_and_gym_make_say_why_a_seed_is_missing(site: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    listed = run_spade(site, home, "list")
    assert listed.returncode == 0, listed.stderr
    assert "regex_match-v1" in listed.stdout and "code_breaker-v1" in listed.stdout
    assert_every_mistake_named(listed.stderr)
    checked = run_spade(site, home, "plugins", "--check")
    assert checked.returncode == 1, checked.stderr
    assert_every_mistake_named(checked.stdout + checked.stderr)

    made = run_spade(site, home, code="""
import gymnasium as gym, spade_core
for gym_id in ("spade/regex_hard-v1", "spade/regex_twin-v1", "spade/shared_name-v1"):
    try:
        gym.make(gym_id)
    except Exception as exc:
        print(type(exc).__name__, exc)
env = gym.make("spade/regex_match-v1")
obs, _ = env.reset(seed=1)
print(type(env.unwrapped).__name__, env.step(env.unwrapped.solution()[0])[1:3])
""")
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert lines[0].startswith("PluginError this seed environment is not registered: plugin 'regexes', "
                               "domain 'regexes', seed 'regex_hard': difficulty = 3.0")
    assert "name = 'regex_twin': a name no other seed has; 2 seeds have it" in lines[1]
    assert "2 seeds have it (plugin 'other' domain 'other', plugin 'regexes' domain 'regexes')" in lines[2]
    # the good seed of the same plugin runs, in a worker process, its helper module imported there
    assert lines[3] == "SandboxedEnv (1.0, True)"


@pytest.mark.slow
def test_a_domain_helper_is_found_from_the_file_and_the_fuzzer_finds_the_bad_input(site: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # spade validate FILE: the file imports the domain's helper module, so the domain applies
    validated = run_spade(site, home, "validate", str(site / "tmp_spade_regex" / "envs" / "regex_match.py"), "--json")
    report = json.loads(validated.stdout)
    assert validated.returncode == 0, report["reasons"]
    assert report["passed"] and report["feasibility_proven"]
    # the domain's fuzz strategy finds the reward outside [0, 1] that only "(a+)+$" produces
    fuzzed = run_spade(site, home, "fuzz", "regex_bad_reward-v1", "--json")
    report = json.loads(fuzzed.stdout)
    assert fuzzed.returncode == 1
    bad = next(f for f in report["findings"] if not f["ok"])
    assert bad["code"] == "reward_out_of_range" and bad["actions"][-1] == "\\boxed{(a+)+$}", bad
    # the same source without the bug passes the same fuzzing
    sound = run_spade(site, home, "fuzz", "regex_match-v1", "--json")
    assert sound.returncode == 0, json.loads(sound.stdout)["reasons"]


def test_a_file_s_domain_is_found_from_the_helper_modules_it_imports() -> None:
    from spade_core.domains import Domain, domain_for_source

    def domain(name: str, *allowed: str) -> Domain:
        return Domain(name=name, description="-", skills=("s",), prompt_spec="-", allowed_modules=frozenset(allowed))

    regexes, games = domain("regexes", "spade_regex.helpers"), domain("games", "math_verify", "chess.*")
    domains = [games, regexes]
    body = "\nclass XEnv:\n    pass\n"
    assert domain_for_source("from spade_regex.helpers import full_match" + body, domains) is regexes
    assert domain_for_source("import spade_regex.helpers as h" + body, domains) is regexes
    assert domain_for_source("from spade_regex import helpers" + body, domains) is regexes  # the module pkg.sub
    assert domain_for_source("from chess.pgn import read_game" + body, domains) is games  # a pkg.* helper
    assert domain_for_source("import chess" + body, domains) is games
    # nothing of a domain's own: the standard library, another package, a relative import
    for source in ("import re, random" + body, "import spade_regexes" + body, "from .helpers import x" + body,
                   "from spade_regex import other" + body, "this is not python"):
        assert domain_for_source(source, domains) is None, source
