"""The environment contract: TextEnv, UnicodeText and ReferenceEnvAdapter.

A reference-format object (reset/step/solution/close) becomes a Gymnasium env whose every
returned value is checked; a misbehaving env fails with an EnvContractError that names
the method and what was wrong.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given
from hypothesis import strategies as st
from spade_core.env import (
    MAX_TEXT_LENGTH,
    EpisodeEnded,
    ReferenceEnvAdapter,
    TextEnv,
    UnicodeText,
    check_reset_result,
    check_step_result,
)
from spade_core.errors import EnvContractError

from .conftest import REFERENCE_ENVS, reference_class


class Scripted:
    """A reference-format env whose step returns whatever the test scripted."""

    def __init__(self, step_result: Any = ("ok", 0.0, False, False, {}), reset_result: Any = ("start", {})) -> None:
        self.step_result = step_result
        self.reset_result = reset_result
        self.seeds: list[int | None] = []
        self.closed = False

    def reset(self, seed: int | None = None) -> Any:
        self.seeds.append(seed)
        return self.reset_result

    def step(self, action: str) -> Any:
        return self.step_result

    def solution(self) -> Any:
        return ("\\boxed{a}", "\\boxed{b}")

    def close(self) -> None:
        self.closed = True


# --- UnicodeText ----------------------------------------------------------------------


@given(st.text(max_size=200))
def test_unicode_text_contains_every_string_within_bounds(text: str) -> None:
    assert UnicodeText(max_length=200).contains(text)


def test_unicode_text_rejects_non_strings_and_overlong_strings() -> None:
    space = UnicodeText(max_length=5)
    assert not space.contains(b"bytes")
    assert not space.contains(3)
    assert not space.contains("x" * 6)
    assert space.contains("héllo")


def test_unicode_text_samples_are_members() -> None:
    space = UnicodeText(max_length=50, seed=1)
    assert all(space.contains(space.sample()) for _ in range(20))


def test_text_env_declares_text_spaces_and_a_unit_reward_range() -> None:
    assert isinstance(TextEnv.observation_space, UnicodeText)
    assert isinstance(TextEnv.action_space, UnicodeText)
    assert TextEnv.reward_range == (0.0, 1.0)


# --- seeding, termination, truncation ---------------------------------------------------


def test_reset_seeds_gymnasium_rng_and_passes_the_seed_on() -> None:
    inner = Scripted()
    env = ReferenceEnvAdapter(inner)
    env.reset(seed=42)
    first = env.np_random.integers(0, 1_000_000)
    env.reset(seed=42)
    assert env.np_random.integers(0, 1_000_000) == first
    assert inner.seeds == [42, 42]


def test_reset_without_seed_gives_the_inner_env_a_reproducible_seed() -> None:
    """reset(seed=s) then reset() must replay identically (Gymnasium's contract), so the
    adapter derives the inner env's seed from its own seeded RNG."""
    a, b = Scripted(), Scripted()
    env_a, env_b = ReferenceEnvAdapter(a), ReferenceEnvAdapter(b)
    env_a.reset(seed=7)
    env_a.reset()
    env_b.reset(seed=7)
    env_b.reset()
    assert a.seeds[1] is not None
    assert a.seeds == b.seeds
    assert env_a.last_seed == a.seeds[1]


def test_terminated_and_truncated_are_kept_apart() -> None:
    env = ReferenceEnvAdapter(Scripted(("won", 1.0, True, False, {})), max_turns=1)
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step("x")
    assert (reward, terminated, truncated) == (1.0, True, False), "a finished task is not a truncation"

    env = ReferenceEnvAdapter(Scripted(("cut", 0.0, False, True, {})))
    env.reset(seed=0)
    assert env.step("x")[2:4] == (False, True), "the inner env's own truncation passes through"


def test_truncation_at_max_turns() -> None:
    env = ReferenceEnvAdapter(Scripted(("go on", 0.0, False, False, {})), max_turns=3)
    env.reset(seed=0)
    flags = [env.step("x")[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    env.reset(seed=0)
    assert env.step("x")[2:4] == (False, False), "reset starts the turn count again"


class PaysForever(Scripted):
    """Wins on every step, and counts what reaches it: a step after the end must not."""

    def __init__(self) -> None:
        super().__init__(("won", 1.0, True, False, {}))
        self.steps = 0

    def step(self, action: str) -> Any:
        self.steps += 1
        return self.step_result


def test_a_step_after_termination_is_refused_without_reaching_the_environment() -> None:
    inner = PaysForever()
    env = ReferenceEnvAdapter(inner)
    env.reset(seed=0)
    assert env.step("x")[1:3] == (1.0, True)
    with pytest.raises(EpisodeEnded, match="call reset"):
        env.step("x")
    assert inner.steps == 1, "the environment was asked for a step after its end"
    env.reset(seed=1)
    assert env.step("x")[1:3] == (1.0, True), "reset starts a new episode"


def test_a_step_after_truncation_is_refused_too_and_is_gymnasiums_reset_needed() -> None:
    inner = Scripted(("go on", 0.0, False, False, {}))
    env = ReferenceEnvAdapter(inner, max_turns=2)
    env.reset(seed=0)
    env.step("x")
    assert env.step("x")[3] is True
    with pytest.raises(gym.error.ResetNeeded):
        env.step("x")
    with pytest.raises(EnvContractError):  # one family with the other contract errors
        env.step("x")


def test_gymnasium_make_holds_the_rule_for_a_seed_environment() -> None:
    import spade_core

    gym.register_envs(spade_core)
    env = gym.make("spade/code_breaker-v1")
    env.reset(seed=3)
    solution = env.unwrapped.solution()
    for action in solution:
        *_, terminated, truncated, _ = env.step(action)
    assert terminated and not truncated
    with pytest.raises(gym.error.ResetNeeded):
        env.step(solution[-1])
    env.close()


def test_flags_are_plain_bools_even_when_the_env_returns_numpy_bools() -> None:
    env = ReferenceEnvAdapter(Scripted(("o", 0.5, np.bool_(True), np.bool_(False), {})))
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step("x")
    assert terminated is True and truncated is False


# --- value validation -----------------------------------------------------------------


@pytest.mark.parametrize(
    "result, message",
    [
        ((42, 0.0, False, False, {}), "observation of type int"),
        (("o", "1.0", False, False, {}), "reward of type str"),
        (("o", None, False, False, {}), "reward of type NoneType"),
        (("o", True, False, False, {}), "reward of type bool"),
        (("o", math.nan, False, False, {}), "non-finite reward nan"),
        (("o", math.inf, False, False, {}), "non-finite reward inf"),
        (("o", 1.5, False, False, {}), "outside the declared range [0.0, 1.0]"),
        (("o", -0.1, False, False, {}), "outside the declared range"),
        (("o", 1.0, "yes", False, {}), "terminated='yes' of type str"),
        (("o", 1.0, 1, False, {}), "terminated=1 of type int"),
        (("o", 1.0, False, None, {}), "truncated=None of type NoneType"),
        (("o", 1.0, False, False, ["info"]), "info of type list"),
        (("o", 1.0, False), "step() returned a 3-tuple (str, float, bool); expected (observation, reward, terminated, truncated, info)"),
        ("just text", "step() returned str; expected (observation, reward, terminated, truncated, info)"),
        (("x" * (MAX_TEXT_LENGTH + 1), 0.0, False, False, {}), "characters (limit"),
    ],
)
def test_bad_step_values_raise_a_clear_contract_error(result: Any, message: str) -> None:
    env = ReferenceEnvAdapter(Scripted(result))
    env.reset(seed=0)
    with pytest.raises(EnvContractError) as err:
        env.step("x")
    assert message in str(err.value)
    assert err.value.method == "step"


@pytest.mark.parametrize(
    "result, message",
    [
        ((1, {}), "observation of type int"),
        (("o", "info"), "info of type str"),
        (("o", {}, "extra"), "reset() returned a 3-tuple (str, dict, str); expected the pair (observation: str, info: dict)"),
        (None, "reset() returned NoneType; expected the pair"),
    ],
)
def test_bad_reset_values_raise_a_clear_contract_error(result: Any, message: str) -> None:
    env = ReferenceEnvAdapter(Scripted(reset_result=result))
    with pytest.raises(EnvContractError) as err:
        env.reset(seed=0)
    assert message in str(err.value)
    assert err.value.method == "reset"


def test_a_bare_string_reset_is_a_contract_violation_naming_what_came_back() -> None:
    # The old Gym reset: repairing it would admit an environment the reference check rejects.
    env = ReferenceEnvAdapter(Scripted(reset_result="only the observation"))
    with pytest.raises(EnvContractError, match=r"reset\(\) returned str; expected the pair \(observation: str, info: dict\)"):
        env.reset(seed=0)


def test_none_info_becomes_an_empty_dict() -> None:
    assert check_reset_result(("o", None)) == ("o", {})


def test_old_gym_four_tuple_step_is_a_contract_violation_naming_the_old_api() -> None:
    env = ReferenceEnvAdapter(Scripted(("done", 1, True, {"k": 1})))
    env.reset(seed=0)
    with pytest.raises(EnvContractError, match=r"step\(\) returned a 4-tuple \(str, int, bool, dict\) \(the old Gym API") as err:
        env.step("x")
    assert err.value.method == "step"


class _Declares:
    reward_range = (-0.1, 1.0)

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        return "o", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return "o", -0.1, False, False, {}


class _Inherits(_Declares):
    pass


def test_the_adapter_enforces_the_inner_class_reward_range_attribute_inherited_too() -> None:
    env = ReferenceEnvAdapter(_Inherits())
    env.reset(seed=0)
    assert env.reward_range == (-0.1, 1.0)
    assert env.step("x")[1] == -0.1
    strict = ReferenceEnvAdapter(_Inherits(), reward_range=(0.0, 1.0))  # the metadata's, given explicitly
    strict.reset(seed=0)
    with pytest.raises(EnvContractError, match="outside the declared range"):
        strict.step("x")


@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.floats(min_value=-1e6, max_value=1e6),
)
def test_any_finite_reward_within_range_passes_and_any_outside_fails(lo: float, width: float) -> None:
    hi = lo + abs(width) + 1.0
    mid = (lo + hi) / 2
    assert check_step_result(("o", mid, False, False, {}), (lo, hi))[1] == mid
    with pytest.raises(EnvContractError):
        check_step_result(("o", hi + 1.0, False, False, {}), (lo, hi))


def test_non_string_actions_are_refused_before_reaching_the_env() -> None:
    env = ReferenceEnvAdapter(Scripted())
    env.reset(seed=0)
    with pytest.raises(TypeError, match="action must be str"):
        env.step(3)  # type: ignore[arg-type]


# --- construction, solution, tools, close -----------------------------------------------


def test_the_adapter_accepts_an_instance_a_class_or_a_factory() -> None:
    cls = reference_class("tower_of_hanoi")
    for inner in (cls(), cls, lambda: cls(n_disks=2)):
        env = ReferenceEnvAdapter(inner)
        obs, _ = env.reset(seed=1)
        assert "Tower of Hanoi" in obs


def test_an_object_without_reset_and_step_is_refused() -> None:
    with pytest.raises(EnvContractError, match="no reset\\(\\)/step\\(\\)"):
        ReferenceEnvAdapter(object())


def test_solution_is_forwarded_tuples_become_lists() -> None:
    env = ReferenceEnvAdapter(Scripted())
    assert env.solution() == ["\\boxed{a}", "\\boxed{b}"]


@pytest.mark.parametrize("bad", [42, ["ok", 3], None])
def test_a_solution_of_the_wrong_type_is_a_contract_error(bad: Any) -> None:
    inner = Scripted()
    inner.solution = lambda: bad  # type: ignore[method-assign]
    with pytest.raises(EnvContractError, match="solution"):
        ReferenceEnvAdapter(inner).solution()


def test_missing_solution_is_not_implemented() -> None:
    class NoSolution:
        def reset(self, seed=None):
            return "o", {}

        def step(self, action):
            return "o", 0.0, False, False, {}

    with pytest.raises(NotImplementedError, match="NoSolution"):
        ReferenceEnvAdapter(NoSolution()).solution()


def test_tool_schemas_are_forwarded_from_a_method_or_an_attribute() -> None:
    schema = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}

    class ToolEnv(Scripted):
        def get_tool_schemas(self) -> list[dict[str, Any]]:
            return [schema]

    class AttrEnv(Scripted):
        tool_schemas = [schema]

    assert ReferenceEnvAdapter(ToolEnv()).tools == [schema]
    assert ReferenceEnvAdapter(AttrEnv()).tools == [schema]
    assert ReferenceEnvAdapter(Scripted()).tools == []


def test_close_reaches_the_inner_env() -> None:
    inner = Scripted()
    ReferenceEnvAdapter(inner).close()
    assert inner.closed


def test_render_ansi_returns_the_last_observation() -> None:
    env = ReferenceEnvAdapter(Scripted(("after step", 0.0, False, False, {})), render_mode="ansi")
    env.reset(seed=0)
    assert env.render() == "start"
    env.step("x")
    assert env.render() == "after step"


# --- Gymnasium's own checker --------------------------------------------------------------


@pytest.mark.parametrize("stem", sorted(p.stem for p in REFERENCE_ENVS.glob("*.py")))
def test_gymnasium_check_env_passes_on_every_reference_fixture(stem: str) -> None:
    cls = reference_class(stem)
    env_id = f"spadetest/{cls.__name__}-v0"
    if env_id not in gym.registry:
        gym.register(
            env_id,
            entry_point=lambda render_mode=None, cls=cls: ReferenceEnvAdapter(
                cls, max_turns=10, render_mode=render_mode
            ),
        )
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a failure here
        check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("stem", sorted(p.stem for p in REFERENCE_ENVS.glob("*.py")))
def test_replaying_the_solution_reaches_full_reward(stem: str) -> None:
    env = ReferenceEnvAdapter(reference_class(stem), max_turns=50)
    for seed in (0, 1, 2):
        env.reset(seed=seed)
        result = None
        for action in env.solution():
            result = env.step(action)
        assert result is not None
        assert result[1] == 1.0 and result[2] is True
