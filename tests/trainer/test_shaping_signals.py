"""Graded learning signals: how far a design got, how well-formed an agent's actions were,
and the novelty score read from a real validation report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.metadata import EnvMetadata
from spade_core.plugins import SpadePlugins
from spade_core.shaping import AgentRewardContext, DesignerRewardContext
from spade_core.store import EnvStore
from spade_designer.validation import Validator
from spade_designer.validation.codes import Stage
from spade_designer.validation.config import ValidationConfig
from spade_trainer.designer_stage import novelty_score
from spade_trainer.shaping import agent_terms, designer_terms
from spade_trainer.shaping_signals import (
    DESIGN_GATES,
    code_structure,
    design_progress,
    parsed_share,
    well_formed_action,
)

from .envs import GUESS_ENV

FULL_REPLY = f"Here is the game.\n```python\n{GUESS_ENV}\n```\n"


@pytest.fixture(scope="module")
def plugins() -> SpadePlugins:
    return SpadePlugins(only=["trainer-shaping"])


def _invalid(stage: str | None, structure: float = 0.0, penalty: float = 0.5) -> DesignerRewardContext:
    return DesignerRewardContext(
        env_id=None, domain="games", skill="s", valid=False, base_reward=0.0, failed_stage=stage,
        extra={"shaping": {"invalid_penalty": penalty}, "code_structure": structure},
    )


# --- design progress -------------------------------------------------------------------------


def test_a_later_gate_is_further_than_every_earlier_one() -> None:
    scores = [design_progress(g) for g in DESIGN_GATES]
    assert scores == sorted(scores) and len(set(scores)) == len(scores)
    assert design_progress(None) == 1.0


@given(st.sampled_from(DESIGN_GATES[2:]), st.floats(0, 1), st.floats(0, 1))
def test_extraction_credit_never_reaches_the_next_gate(later: str, a: float, b: float) -> None:
    assert design_progress("extract", a) < design_progress(later, b)
    assert design_progress("generation") <= design_progress("extract", a)


@given(st.sampled_from(DESIGN_GATES), st.sampled_from(DESIGN_GATES), st.floats(0, 1), st.floats(0.01, 5))
def test_the_invalid_penalty_is_graded_and_always_a_penalty(
    plugins: SpadePlugins, g1: str, g2: str, structure: float, weight: float
) -> None:
    p1 = designer_terms(plugins, _invalid(g1, structure, weight))["invalid_env"]
    p2 = designer_terms(plugins, _invalid(g2, structure, weight))["invalid_env"]
    assert -weight <= p1 < 0 and -weight <= p2 < 0
    if DESIGN_GATES.index(g1) < DESIGN_GATES.index(g2):
        assert p1 < p2  # the candidate that got further is penalised less


def test_truncated_code_is_penalised_less_than_no_code(plugins: SpadePlugins) -> None:
    truncated = FULL_REPLY[: len(FULL_REPLY) // 2]
    none = designer_terms(plugins, _invalid("extract", code_structure("I cannot write that.")))["invalid_env"]
    cut = designer_terms(plugins, _invalid("extract", code_structure(truncated)))["invalid_env"]
    assert none == pytest.approx(-0.5 * (1 - 1 / len(DESIGN_GATES)))
    assert none < cut < designer_terms(plugins, _invalid("static"))["invalid_env"]


def test_an_unknown_stage_gets_the_full_penalty(plugins: SpadePlugins) -> None:
    assert designer_terms(plugins, _invalid("my_plugin_stage"))["invalid_env"] == -0.5


# --- code structure ----------------------------------------------------------------------------


def test_a_complete_environment_reaches_every_milestone() -> None:
    assert code_structure(FULL_REPLY) == 1.0


def test_prose_reaches_none() -> None:
    assert code_structure("Sure! A guessing game where you guess numbers.") == 0.0


def test_a_cut_reply_loses_the_parse_milestone() -> None:
    cut = FULL_REPLY[: FULL_REPLY.index("def solution")] + "def solution(self):\n        return ["
    assert 0.0 < code_structure(cut) < 1.0


def test_two_cut_replies_with_the_same_milestones_differ_by_valid_code() -> None:
    head = "```python\nclass GuessEnv:\n    def reset(self, seed=None):\n        self.n = 3\n"
    short = head + "        return 'go', {}\n    def step(self, a"
    longer = head + "        return 'go', {}\n    def step(self, a):\n        return 'x', 0.0, False, False, {}\n    x = ("
    fence = len("```python\n")
    assert parsed_share(longer[fence:]) > parsed_share(short[fence:]) > 0
    assert code_structure(longer) > code_structure(short)


def test_prose_that_happens_to_parse_earns_nothing() -> None:
    assert code_structure("hello") == 0.0


@given(st.text(max_size=400))
def test_structure_is_a_fraction_for_any_text(text: str) -> None:
    assert 0.0 <= code_structure(text) <= 1.0


# --- agent well-formed actions -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "fmt", "ok"),
    [
        ("I think 42. \\boxed{guess 42}", "boxed", True),
        ("\\boxed{}", "boxed", False),
        ("guess 42", "boxed", False),
        ('<tool_call>{"name": "ls", "arguments": {}}</tool_call>', "tool_call", True),
        ("<answer>done</answer>", "tool_call", True),
        ("<tool_call>{not json</tool_call>", "tool_call", False),
        ("look", "free_text", True),
        ("   ", "free_text", False),
    ],
)
def test_well_formed_actions_per_format(message: str, fmt: str, ok: bool) -> None:
    assert well_formed_action(message, fmt) is ok


@given(st.integers(1, 25), st.data(), st.floats(0.0, 2.0))
def test_the_well_formed_term_is_the_weighted_fraction_of_turns(
    plugins: SpadePlugins, turns: int, data: Any, weight: float
) -> None:
    good = data.draw(st.integers(0, turns))
    ctx = AgentRewardContext(env_id="e", domain="games", episode_return=0.0, turns=turns, terminated=False,
                             extra={"well_formed_turns": good, "shaping": {"well_formed_weight": weight}})
    assert agent_terms(plugins, ctx) == {"well_formed": pytest.approx(weight * good / turns)}


def test_no_count_no_agent_term(plugins: SpadePlugins) -> None:
    ctx = AgentRewardContext(env_id="e", domain="games", episode_return=1.0, turns=3, terminated=True)
    assert agent_terms(plugins, ctx) == {}


# --- novelty from the validation report ---------------------------------------------------------


class _UnusedRunner:
    """The novelty stage compares code only; it never runs the environment."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the novelty stage should not call runner.{name}")


def test_novelty_is_read_from_a_real_novelty_stage(tmp_path: Path) -> None:
    config = ValidationConfig(stages=(Stage.static, Stage.novelty))
    store = EnvStore(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        empty = Validator(_UnusedRunner(), config).validate(GUESS_ENV, store=store)  # type: ignore[arg-type]
        assert empty.passed and novelty_score(empty) == 1.0  # nothing to compare with

        store.add(GUESS_ENV, EnvMetadata(name="guess", domain="games", skill="s", max_turns=3))
        validator = Validator(_UnusedRunner(), config)  # type: ignore[arg-type]
        twin = validator.validate(GUESS_ENV + "\n# the same game\n", store=store)
        assert not twin.passed and twin.failed_stage == "novelty"
        assert novelty_score(twin) is not None and novelty_score(twin) < 0.4

        other = "class CounterEnv:\n" + "\n".join(
            [
                "    def reset(self, seed=None):",
                "        self.n = 0",
                "        return 'count to three', {}",
                "    def step(self, action):",
                "        self.n += 1",
                "        done = self.n >= 3",
                "        return str(self.n), float(done), done, False, {}",
            ]
        )
        fresh = validator.validate(other, store=store)
        assert fresh.passed
        score = novelty_score(fresh)
        assert score is not None and 0.4 < score <= 1.0
    finally:
        store.close()


def test_no_novelty_stage_no_score() -> None:
    from spade_core.metadata import ValidationReport

    assert novelty_score(None) is None
    assert novelty_score(ValidationReport(passed=False, failed_stage="static", reasons=["x"])) is None
