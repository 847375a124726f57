"""Invariants that hold for all inputs: MinHash, hint leakage, the action decoder and the
checks on values returned by environments."""

from __future__ import annotations

import builtins
import keyword
import math
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from spade_core.actions import format_boxed
from spade_core.contract import MAX_TEXT_LENGTH
from spade_core.env import check_reset_result, check_step_result
from spade_core.errors import EnvContractError
from spade_designer.validation.codes import Reason
from spade_designer.validation.leakage import leaked_payloads, tokens
from spade_designer.validation.minhash import MinHasher, NoveltyIndex, code_tokens, similarity
from spade_designer.validation.runner import Bounds, Instance, Rejection, classify_error
from spade_designer.validation.strategies import ActionProgram, generic_pool

HASHER = MinHasher(permutations=64)
#: Names the normaliser keeps as they are (keywords, builtins, self/cls/super) are not
#: identifiers a rename can touch; nor are the names ``program`` itself uses (an attribute
#: renamed to ``reset`` is the method's name, a different program).
_KEPT = (
    frozenset(keyword.kwlist)
    | frozenset(dir(builtins))
    | {"self", "cls", "super", "reset", "step", "seed", "action"}
)
identifiers = st.text(string.ascii_lowercase, min_size=3, max_size=8).filter(lambda s: s not in _KEPT)


def program(a: str, b: str, n: int) -> str:
    return (
        f"class {a.title()}Env:\n"
        f"    def reset(self, seed=None):\n"
        f"        self.{b} = {n}\n"
        f"        return 'go', {{}}\n\n"
        f"    def step(self, action):\n"
        f"        self.{b} += len(action)\n"
        f"        return str(self.{b}), 0.0, self.{b} > {n + 9}, False, {{}}\n"
    )


@given(identifiers, identifiers, identifiers, identifiers, st.integers(0, 10**6), st.integers(0, 10**6))
def test_renaming_identifiers_and_changing_numbers_keeps_the_signature(a, b, c, d, n, m):
    assume(len({a, b, c, d}) == 4)
    assert code_tokens(program(a, b, n)) == code_tokens(program(c, d, m))
    assert similarity(HASHER.signature(program(a, b, n)), HASHER.signature(program(c, d, m))) == 1.0


@given(st.text(max_size=400), st.text(max_size=400))
@settings(max_examples=50)
def test_similarity_is_symmetric_bounded_and_reflexive(x, y):
    sx, sy = HASHER.signature(x), HASHER.signature(y)
    assert similarity(sx, sy) == similarity(sy, sx)
    assert 0.0 <= similarity(sx, sy) <= 1.0
    assert similarity(sx, sx) == 1.0


@given(st.text(string.printable, max_size=60))
def test_comments_and_docstrings_do_not_change_the_tokens(note):
    assume('"' not in note and "\n" not in note and "\r" not in note and "\\" not in note and "\x0b" not in note and "\x0c" not in note)
    base = program("alpha", "beta", 3)
    commented = f'"""{note}"""\n' + base.replace("    def step", f"    # {note}\n    def step")
    assert code_tokens(commented) == code_tokens(base)


def test_the_index_finds_the_closest_and_skips_the_excluded_id():
    index = NoveltyIndex(HASHER)
    index.add("a-v1", program("alpha", "beta", 3))
    index.add("b-v1", "def f(x):\n    return [y * 2 for y in range(x) if y % 3]\n")
    twin, score = index.nearest(program("gamma", "delta", 7))
    assert twin == "a-v1" and score == 1.0
    assert index.nearest(program("gamma", "delta", 7), exclude="a-v1")[0] == "b-v1"
    assert NoveltyIndex(HASHER).nearest("x = 1") is None


words = st.text(string.ascii_lowercase + string.digits, min_size=2, max_size=8)


@given(st.lists(words, min_size=1, max_size=4), st.text(max_size=40), st.text(max_size=40))
def test_a_hint_that_spells_out_every_action_leaks(answers, before, after):
    solution = [format_boxed(a) for a in answers]
    hint = before + " " + ", then ".join(answers) + " " + after
    assert leaked_payloads(hint, solution) is not None


@given(st.lists(words, min_size=1, max_size=4), st.text(string.ascii_uppercase + " .,", max_size=80))
def test_a_hint_sharing_no_word_with_the_solution_does_not_leak(answers, hint):
    assume(not set(tokens(hint)) & {t for a in answers for t in tokens(a)})
    assert leaked_payloads(hint, [format_boxed(a) for a in answers]) is None


PROGRAM = ActionProgram(pool=generic_pool(200), known=("\\boxed{42}", "\\boxed{go north}"), domain=("\\boxed{x}",))


@given(st.binary(max_size=200), st.integers(1, 30))
def test_decoding_is_deterministic_and_bounded(data, max_steps):
    first = PROGRAM.decode(data, max_steps)
    assert first == PROGRAM.decode(data, max_steps)
    assert len(first) <= max_steps
    assert all(isinstance(a, str) for a in first)


def test_zero_bytes_decode_to_the_simplest_actions():
    assert PROGRAM.decode(bytes(8), 10) == [generic_pool(200)[0]] * 4 == [""] * 4


class _Returns:
    """A one-value runner: step returns whatever the test hands it."""

    def __init__(self, value):
        self.value = value

    def spawn(self, source, allowed_modules=(), class_name=None):
        return 1

    def reset(self, handle, seed=None):
        return ("start", {})

    def step(self, handle, action):
        return self.value

    def call(self, handle, method):
        return None

    def close_env(self, handle):
        pass


def _step(value, lo=0.0, hi=1.0):
    env = Instance(_Returns(value), "src", Bounds((lo, hi), 100, 10.0))
    env.reset(0)
    return env.step("a")


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_reward_is_accepted_iff_finite_and_in_range(reward):
    try:
        _step(("obs", reward, False, False, {}))
    except Rejection as rej:
        expected = Reason.non_finite_reward if not math.isfinite(reward) else Reason.reward_out_of_range
        assert rej.code is expected
        assert rej.actions == ["a"] and rej.seed == 0
    else:
        assert math.isfinite(reward) and 0.0 - 1e-9 <= reward <= 1.0 + 1e-9


@given(st.integers(0, 300))
def test_an_observation_is_accepted_iff_within_the_size_bound(n):
    try:
        _step(("x" * n, 0.0, False, False, {}))
    except Rejection as rej:
        assert rej.code is Reason.observation_too_large and n > 100
    else:
        assert n <= 100


@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers(), max_size=6), st.tuples(st.text(), st.text())))
def test_malformed_step_results_are_wrong_types(value):
    try:
        _step(value)
    except Rejection as rej:
        assert rej.code is Reason.step_wrong_types
    else:
        raise AssertionError(f"{value!r} was accepted as a step result")


_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=120),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.lists(st.integers(), max_size=2),
)


@given(
    st.one_of(
        st.tuples(_values, _values, _values, _values, _values),
        st.tuples(st.text(max_size=120), st.floats(allow_nan=True), st.booleans(), st.booleans(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
        st.tuples(_values, _values, _values, _values),
    )
)
def test_the_fast_check_of_a_step_agrees_with_the_full_one(out):
    """``_check_step`` accepts the common well-typed tuple without the full checks: it must
    accept and reject exactly what ``_check_step_values`` does."""

    def outcome(full: bool):
        env = Instance(_Returns(None), "src", Bounds((0.0, 1.0), 100, 10.0))
        env.reset(0)
        check = env._check_step_values if full else env._check_step
        try:
            step = check(out, 0.0, timed=False)
        except Rejection as rej:
            return rej.code
        return (step.observation, step.reward, step.terminated, step.truncated, step.info)

    assert outcome(full=False) == outcome(full=True)


class _Resets(_Returns):
    """A one-value runner whose reset returns whatever the test hands it."""

    def reset(self, handle, seed=None):
        return self.value


_results = st.one_of(
    _values,
    st.tuples(_values, _values),
    st.tuples(_values, _values, _values, _values),
    st.tuples(_values, _values, _values, _values, _values),
    st.tuples(st.text(max_size=120), st.floats(allow_nan=True), st.booleans(), st.booleans(), st.none()),
)


@given(_results)
def test_the_runner_judges_a_step_result_as_the_environment_contract_does(out):
    """One home for the contract's checks: what validation rejects of a step result, with
    which message, is what ``spade_core.env`` (and so the sandbox) says of the same value;
    the reason code is the one a violation raised by the sandbox gets."""
    env = Instance(_Returns(out), "src", Bounds((0.0, 1.0), MAX_TEXT_LENGTH, 10.0))
    env.reset(0)
    try:
        expected = check_step_result(out, (0.0, 1.0))
    except EnvContractError as exc:
        with pytest.raises(Rejection) as rej:
            env.step("a")
        assert rej.value.message == str(exc)
        assert rej.value.code is classify_error(exc, "step")[0]
        assert rej.value.actions == ["a"] and rej.value.seed == 0
    else:
        step = env.step("a")
        assert (step.observation, step.reward, step.terminated, step.truncated, step.info) == expected


@given(_results)
def test_the_runner_judges_a_reset_result_as_the_environment_contract_does(out):
    env = Instance(_Resets(out), "src", Bounds((0.0, 1.0), MAX_TEXT_LENGTH, 10.0))
    try:
        expected = check_reset_result(out)
    except EnvContractError as exc:
        with pytest.raises(Rejection) as rej:
            env.reset(3)
        assert rej.value.message == str(exc)
        assert rej.value.code is classify_error(exc, "reset")[0] is Reason.reset_wrong_types
        assert rej.value.actions is None and rej.value.seed == 3
    else:
        assert env.reset(3) == expected


def test_an_error_that_ends_the_worker_is_fatal_whatever_its_subclass():
    """The runner reads ``SandboxError.worker_fatal`` and the kind, not a class name: a
    worker killed from outside (``WorkerKilled``) or an instance lost with it is a worker
    crash after which nothing is retried; an unavailable sandbox is no verdict."""
    from spade_sandbox.errors import (
        EnvCodeError,
        InstanceLost,
        SandboxMemoryError,
        SandboxTimeout,
        SandboxUnavailable,
        WorkerKilled,
    )

    assert classify_error(WorkerKilled("killed by signal 9"), "step") == (Reason.worker_crash, True)
    assert classify_error(InstanceLost("instance lost"), "reset") == (Reason.worker_crash, True)
    assert classify_error(SandboxMemoryError("out of memory"), "step") == (Reason.memory_limit, True)
    assert classify_error(SandboxTimeout("too slow"), "step") == (Reason.call_timeout, True)
    assert classify_error(EnvCodeError("raised"), "step") == (Reason.step_exception, False)
    assert classify_error(SandboxUnavailable("no zygote"), "step")[1] is False
