"""Privileged hints: cleaning, the leakage check, and regeneration of leaking hints."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_designer.config import HintSettings
from spade_designer.hints import (
    HintRequest,
    HintWriter,
    SolutionProbe,
    babble,
    clean_hint,
    find_leak,
    key_values,
    sandbox_probe,
)
from spade_designer.llm import ReplayBackend

from .conftest import LANTERN  # hidden number 10-99, higher/lower feedback, solution ["\\boxed{guess N}"]

OBS = "Open the vault: find its 3-digit code. Command: \\boxed{try DDD} with three digits 0-9, e.g. \\boxed{try 505}."


def vault(seed: int, code: str) -> SolutionProbe:
    return SolutionProbe(seed, OBS, ["\\boxed{try 555}", "\\boxed{try " + code + "}"])


PROBES = [vault(42, "381"), vault(123, "907")]


def test_key_values_are_hidden_and_seed_dependent():
    assert key_values(PROBES) == {42: {"381"}, 123: {"907"}}


@pytest.mark.parametrize(
    "hint, leaks",
    [
        ("Turn each dial toward the direction the feedback names.", False),
        ("Open with try 555: every dial then tells you which half its digit is in.", False),  # strategy, all seeds
        ("The code is 381.", True),  # a hidden value of seed 42
        ("Type \\boxed{try 555} then \\boxed{try 907}.", True),  # the whole solution of seed 123
    ],
)
def test_leakage_check(hint, leaks):
    reason = find_leak(hint, PROBES)
    assert (reason is not None) == leaks
    if leaks:
        assert "seed" in reason


@given(st.text(max_size=400), st.integers(1, 4), st.integers(20, 300))
def test_clean_hint_respects_its_bounds(text, sentences, chars):
    hint = clean_hint(text, max_sentences=sentences, max_chars=chars)
    assert len(hint) <= chars
    assert "```" not in hint
    assert hint == hint.strip()


def test_clean_hint_drops_labels_code_and_extra_sentences():
    text = "Hint: Work dial by dial. Use the feedback! Then narrow down. Finally, guess.\n```python\nprint(1)\n```"
    assert clean_hint(text) == "Work dial by dial. Use the feedback! Then narrow down."


@pytest.fixture(scope="module")
def pool():
    from spade_sandbox.launcher import SandboxLauncher

    with SandboxLauncher().pool() as p:
        yield p


def test_sandbox_probe_reads_solution_and_first_observation(pool):
    a, b = sandbox_probe(pool)(HintRequest(LANTERN, allowed_modules=()), [42, 123])
    assert a.observation.startswith("A lantern hides a code")
    assert a.solution[0].startswith("\\boxed{guess ") and a.solution != b.solution


def test_leaking_hint_is_regenerated_and_every_attempt_kept(pool):
    probe = sandbox_probe(pool)
    (real,) = probe(HintRequest(LANTERN), [42])
    code = real.solution[0].removeprefix("\\boxed{guess ").removesuffix("}")
    backend = ReplayBackend([f"Hint: the code is {code}.", "Halve the remaining range with every guess."])
    (result,) = HintWriter(backend, HintSettings(check_seeds=[42, 123]), probe).write_many([HintRequest(LANTERN)])
    assert result.accepted and result.hint == "Halve the remaining range with every guess."
    assert [a.leak is None for a in result.attempts] == [False, True]
    assert code in result.attempts[0].leak


@pytest.mark.parametrize(
    "hint",
    [
        "The code is a simple and efficient way to calculate the weight of boxes in a box-box-box-box-box-box.",
        "guess guess guess guess the number",
        "the the number is the the the number is the the the number is the the the",
    ],
)
def test_babble_is_named(hint):
    assert babble(hint) is not None


@pytest.mark.parametrize(
    "hint",
    [
        "Halve the remaining range with every guess.",
        "Weigh two boxes at a time, then subtract known weights; very very careful bookkeeping helps.",
        "",
    ],
)
def test_advice_is_not_babble(hint):
    assert babble(hint) is None


@given(st.lists(st.sampled_from(["keep", "a", "running", "range", "of", "candidates", "and", "halve", "it"]),
                min_size=1, max_size=8, unique=True))
def test_distinct_words_are_never_babble(words):
    assert babble(" ".join(words)) is None


def test_babbling_hint_is_regenerated(pool):
    probe = sandbox_probe(pool)
    backend = ReplayBackend(["box-box-box-box-box-box-box", "Halve the remaining range with every guess."])
    (result,) = HintWriter(backend, HintSettings(check_seeds=[42], attempts=2), probe).write_many([HintRequest(LANTERN)])
    assert result.accepted and result.hint == "Halve the remaining range with every guess."
    assert "repeats 'box'" in result.attempts[0].leak


def test_hint_rejected_when_every_attempt_leaks(pool):
    probe = sandbox_probe(pool)
    (real,) = probe(HintRequest(LANTERN), [42])
    backend = ReplayBackend(rules=[("source code", f"Just type {real.solution[0]}.")])
    settings = HintSettings(check_seeds=[42], attempts=3)
    (result,) = HintWriter(backend, settings, probe).write_many([HintRequest(LANTERN)])
    assert not result.accepted and result.hint is None
    assert len(result.attempts) == 3 and "every hint attempt was rejected" in result.reason


def test_environment_that_cannot_run_gets_no_hint(pool):
    backend = ReplayBackend(["never asked"])
    broken = "class BadEnv:\n    def __init__(self):\n        raise ValueError('nope')\n"
    (result,) = HintWriter(backend, HintSettings(), sandbox_probe(pool)).write_many([HintRequest(broken)])
    assert not result.accepted and "leakage check" in result.reason
    assert backend.calls == []
