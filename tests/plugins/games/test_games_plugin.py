"""The games plugin as SPADE sees it: discovery, the domain record, prompt spec, seed catalog."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import spade_games
from gymnasium.utils.env_checker import check_env
from spade_core.domains import Domain
from spade_core.env import ReferenceEnvAdapter
from spade_core.metadata import NAME_RE, ActionFormat
from spade_core.plugins import SpadePlugins
from spade_core.source import find_env_class, load_trusted_class
from spade_games.prompt import ALLOWED_IMPORTS, PROMPT_SPEC, SKELETON

from .conftest import SEED_ENVS, play

SIX_SKILLS = {
    "mathematical_reasoning",
    "logical_deduction",
    "spatial_reasoning",
    "pattern_recognition",
    "optimization",
    "causal_inference",
}


def test_the_games_domain_loads_through_the_entry_point(games_domain: Domain) -> None:
    plugins = SpadePlugins(only=["games"])
    info = next(i for i in plugins.infos if i.name == "games")
    assert not info.builtin and info.distribution == "spade-games"
    assert "spade_register_domains" in info.hooks
    assert games_domain.name == "games"
    assert set(games_domain.skills) == SIX_SKILLS and len(games_domain.skills) == 6


def test_the_domain_is_boxed_and_fuzzable(games_domain: Domain) -> None:
    assert games_domain.action_format is ActionFormat.boxed
    assert games_domain.fuzz_strategy is not None
    from hypothesis.strategies import SearchStrategy

    assert isinstance(games_domain.fuzz_strategy(), SearchStrategy)
    assert games_domain.garbage_actions and all(isinstance(a, str) for a in games_domain.garbage_actions)


def test_importing_the_plugin_does_not_import_hypothesis() -> None:
    code = "import sys, spade_games.plugin as p; p.games_domain(); print('hypothesis' in sys.modules)"
    env = {**os.environ, "SPADE_PLUGINS": "games"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"


def test_at_least_eighteen_seeds_three_per_skill(games_domain: Domain) -> None:
    assert len(games_domain.seed_envs) >= 18
    per_skill = Counter(s.skill for s in games_domain.seed_envs)
    assert set(per_skill) == SIX_SKILLS
    assert all(n >= 3 for n in per_skill.values()), per_skill
    names = [s.name for s in games_domain.seed_envs]
    assert len(set(names)) == len(names)
    assert all(NAME_RE.match(n) for n in names)


@pytest.mark.parametrize("seed_env", SEED_ENVS, ids=[s.name for s in SEED_ENVS])
def test_each_seed_record_describes_its_file(seed_env) -> None:
    package_dir = Path(spade_games.__file__).parent
    assert seed_env.path.is_file() and seed_env.path.parent == package_dir / "envs"
    source = seed_env.source()
    assert find_env_class(source) == seed_env.class_name
    assert seed_env.description and seed_env.difficulty is not None and 0.0 < seed_env.difficulty < 1.0
    # the reference trains with at most 25 turns; the bottom rung (the learning experiment's
    # game: two guesses and room for two invalid replies) is the one short game by design
    lowest = 4 if seed_env.name == "higher_lower" else 8
    assert lowest <= seed_env.max_turns <= 25
    assert seed_env.gym_id == f"spade/{seed_env.name}-v1"


def test_difficulties_vary(games_domain: Domain) -> None:
    difficulties = [s.difficulty for s in games_domain.seed_envs]
    assert max(difficulties) - min(difficulties) >= 0.3


_FORBIDDEN_CALLS = {
    "eval",
    "exec",
    "compile",
    "open",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "vars",
    "__import__",
    "input",
    "breakpoint",
}


def _standard_library_only_problems(source: str) -> list[str]:
    """What a sandbox-style static check would object to: imports, dunders, dynamic access."""
    problems = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            problems += [f"import {a.name}" for a in node.names if a.name.split(".")[0] not in ALLOWED_IMPORTS]
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] not in ALLOWED_IMPORTS:
                problems.append(f"from {node.module} import")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr != "__init__":
            problems.append(f"attribute {node.attr}")
        elif isinstance(node, ast.Name) and node.id.startswith("__"):
            problems.append(f"name {node.id}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FORBIDDEN_CALLS:
            problems.append(f"call {node.func.id}()")
    return problems


@pytest.mark.parametrize("seed_env", SEED_ENVS, ids=[s.name for s in SEED_ENVS])
def test_seed_games_use_only_the_allowed_standard_library(seed_env) -> None:
    assert _standard_library_only_problems(seed_env.source()) == []


def test_the_static_rule_check_catches_what_it_claims() -> None:
    bad = "import os\nfrom subprocess import run\nx = ().__class__\ngetattr(x, 'y')\n"
    assert len(_standard_library_only_problems(bad)) == 4


def test_prompt_spec_states_the_rules_the_pool_follows() -> None:
    for phrase in (
        "random.Random(seed)",
        "\\boxed{",
        "solution(self)",
        "max_turns",
        "terminated=True",
        "truncated=True",
        "[0, 1]",
        "`Env`",
        "never",
        "hidden state",
    ):
        assert phrase in PROMPT_SPEC, phrase
    for module in ALLOWED_IMPORTS:
        assert module in PROMPT_SPEC
    assert SKELETON in PROMPT_SPEC
    assert _standard_library_only_problems(SKELETON) == []


def test_the_prompt_skeleton_is_itself_a_valid_game() -> None:
    cls = load_trusted_class(SKELETON)
    check_env(ReferenceEnvAdapter(cls(), max_turns=10), skip_render_check=True)
    for seed in range(30):
        env = ReferenceEnvAdapter(cls(), max_turns=10)
        env.reset(seed=seed)
        steps = play(env, seed, env.solution())[1:]
        assert steps[-1][1:] == (1.0, True, False)
        first, *_ = play(ReferenceEnvAdapter(cls(), max_turns=10), seed, ["\\boxed{asdf}"])[1]
        assert "Invalid" in first


@pytest.mark.parametrize(
    "first_import",
    ["import spade_games.catalog", "import spade_games.plugin", "import spade_core"],
)
def test_any_import_order_registers_the_domain_without_warnings(first_import: str) -> None:
    # Importing spade_core loads this plugin; a cycle would silently lose the domain.
    code = (
        f"{first_import}\n"
        "from spade_core.plugins import get_plugins\n"
        "print(len(get_plugins().domains()['games'].seed_envs))\n"
    )
    env = {**os.environ, "SPADE_PLUGINS": "games"}  # other plugins are not under test here
    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", code], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) == len(SEED_ENVS)


@pytest.mark.parametrize("seed_env", SEED_ENVS, ids=[s.name for s in SEED_ENVS])
def test_every_seed_is_registered_with_gymnasium(seed_env) -> None:
    import gymnasium as gym

    import spade_core

    gym.register_envs(spade_core)
    env = gym.make(seed_env.gym_id)
    try:
        first_obs, _ = env.reset(seed=5)
        assert "\\boxed{" in first_obs
        assert env.unwrapped.max_turns == seed_env.max_turns
    finally:
        env.close()


def test_the_prompt_gives_ideas_for_exactly_the_domain_skills(games_domain: Domain) -> None:
    from spade_games.prompt import SKILL_IDEAS

    assert tuple(SKILL_IDEAS) == games_domain.skills
    for skill, ideas in SKILL_IDEAS.items():
        assert f"- {skill}: {ideas}" in PROMPT_SPEC
