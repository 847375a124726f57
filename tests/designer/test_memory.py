"""Memory selection over a real store: in-band high regret, negatives, failures, diversity."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_designer.config import MemoryPolicy
from spade_designer.memory import StoreMemory, jaccard, shingles

from .conftest import add_env, distinct_source


def test_reference_policy_picks_two_in_band_by_regret_one_negative_one_failure(store):
    add_env(store, 1, win_rate=0.5, regret=0.10)
    add_env(store, 2, win_rate=0.3, regret=0.40)
    add_env(store, 3, win_rate=0.7, regret=0.25)
    add_env(store, 4, win_rate=0.95, regret=0.90)  # high regret but too easy: not "different"
    add_env(store, 5, win_rate=0.02, regret=0.0)
    add_env(store, 6, passed=False, reasons=["nondeterministic: seeds differ"])
    sel = StoreMemory(store).retrieve("games", "logical_deduction")
    assert [e.env_id for e in sel.by_role("different")] == ["Game2Env_x-v1", "Game3Env_x-v1"]
    negatives = sel.by_role("too_hard") + sel.by_role("too_easy")
    assert len(negatives) == 1
    assert negatives[0].env_id == "Game5Env_x-v1" and negatives[0].role == "too_hard"  # newest first
    (failure,) = sel.by_role("failure")
    assert failure.env_id == "Game6Env_x-v1" and failure.reasons == ("nondeterministic: seeds differ",)
    assert sel.considered == 5  # the rejected candidate takes no place in the window
    assert all(e.code for e in sel.examples)


def test_too_easy_is_labelled(store):
    add_env(store, 1, win_rate=0.99, regret=0.0)
    (neg,) = StoreMemory(store).retrieve("games", "logical_deduction").examples
    assert neg.role == "too_easy" and neg.win_rate == 0.99


def test_near_duplicates_are_never_shown_together(store):
    base = distinct_source(1)
    add_env(store, 1, win_rate=0.5, regret=0.9, source=base)
    add_env(store, 2, win_rate=0.5, regret=0.8, source=base.replace("return", "return ", 1))
    add_env(store, 3, win_rate=0.5, regret=0.1)
    sel = StoreMemory(store).retrieve("games", "logical_deduction")
    assert [e.env_id for e in sel.examples] == ["Game1Env_x-v1", "Game3Env_x-v1"]


def test_window_bounds_what_is_considered(store):
    for i in range(6):
        add_env(store, i, win_rate=0.5, regret=0.1 * i)
    sel = StoreMemory(store, MemoryPolicy(window=3)).retrieve("games", "logical_deduction")
    assert sel.considered == 3
    assert {e.env_id for e in sel.examples} <= {"Game3Env_x-v1", "Game4Env_x-v1", "Game5Env_x-v1"}
    assert sel.examples[0].env_id == "Game5Env_x-v1"


def test_only_the_requested_skill_is_shown_by_default(store):
    add_env(store, 1, skill="optimization", win_rate=0.5, regret=0.9)
    add_env(store, 2, skill="logical_deduction", win_rate=0.5, regret=0.1)
    add_env(store, 3, skill="optimization", win_rate=0.99, regret=0.0)
    sel = StoreMemory(store).retrieve("games", "logical_deduction")
    assert [e.env_id for e in sel.examples] == ["Game2Env_x-v1"]


def test_requested_skill_first_other_skills_fill_in(store):
    add_env(store, 1, skill="optimization", win_rate=0.5, regret=0.9)
    add_env(store, 2, skill="logical_deduction", win_rate=0.5, regret=0.1)
    add_env(store, 3, skill="logical_deduction", win_rate=0.5, regret=0.2, domain="tooluse")  # other domain
    sel = StoreMemory(store, MemoryPolicy(same_skill_only=False)).retrieve("games", "logical_deduction")
    assert [e.env_id for e in sel.examples] == ["Game2Env_x-v1", "Game1Env_x-v1"]


def test_negatives_lie_below_a_tenth_or_above_nine_tenths(store):
    add_env(store, 1, win_rate=0.12, regret=0.0)  # outside the in-band range, but no negative
    add_env(store, 2, win_rate=0.88, regret=0.0)
    assert StoreMemory(store).retrieve("games", "logical_deduction").examples == ()
    add_env(store, 3, win_rate=0.05, regret=0.0)
    (neg,) = StoreMemory(store).retrieve("games", "logical_deduction").examples
    assert neg.env_id == "Game3Env_x-v1" and neg.role == "too_hard"


def test_rejected_candidates_take_no_place_in_the_window(store):
    add_env(store, 1, win_rate=0.5, regret=0.3)
    for i in range(2, 6):
        add_env(store, i, passed=False, reasons=["broken"])
    sel = StoreMemory(store, MemoryPolicy(window=2, failures=0)).retrieve("games", "logical_deduction")
    assert [e.env_id for e in sel.examples] == ["Game1Env_x-v1"]


def test_in_band_examples_are_drawn_at_random_from_the_top_by_regret(store):
    import random

    for i in range(14):
        add_env(store, i, win_rate=0.5, regret=0.01 * (i + 1))
    mem = StoreMemory(store, MemoryPolicy(failures=0, negatives=0))
    top10 = {f"Game{i}Env_x-v1" for i in range(4, 14)}  # max(3 * 2, 10) highest regrets
    rng = random.Random(0)
    draws = [tuple(mem.retrieve("games", "logical_deduction", rng=rng).ids) for _ in range(30)]
    assert all(len(d) == 2 and set(d) <= top10 for d in draws)
    assert len(set(draws)) > 5  # designs of one round see different examples
    assert {i for d in draws for i in d} > {"Game13Env_x-v1", "Game12Env_x-v1"}
    # shown best first; without a generator the top two, as before
    regret = {f"Game{i}Env_x-v1": i for i in range(14)}
    assert all(regret[a] > regret[b] for a, b in draws)
    assert mem.retrieve("games", "logical_deduction").ids == ["Game13Env_x-v1", "Game12Env_x-v1"]


def test_unmeasured_environments_are_not_examples_and_empty_store_gives_nothing(store):
    assert StoreMemory(store).retrieve("games", "logical_deduction").examples == ()
    add_env(store, 1)
    assert StoreMemory(store).retrieve("games", "logical_deduction").examples == ()


def test_code_prefix_is_bounded(store):
    add_env(store, 1, win_rate=0.5, regret=0.5)
    (ex,) = StoreMemory(store, MemoryPolicy(code_prefix_chars=40)).retrieve("games", "logical_deduction").examples
    assert len(ex.code) == 40


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.booleans()), min_size=0, max_size=12),
    st.integers(0, 3), st.integers(0, 2), st.integers(0, 2),
)
def test_selection_respects_the_policy_for_any_pool(tmp_path_factory, envs, k_high, k_neg, k_fail):
    from spade_core.store import EnvStore

    store = EnvStore(f"sqlite:///{tmp_path_factory.mktemp('m') / 's.db'}")
    try:
        for i, (wr, regret, passed) in enumerate(envs):
            add_env(store, i, win_rate=wr if passed else None, regret=regret if passed else None, passed=passed)
        policy = MemoryPolicy(high_regret=k_high, negatives=k_neg, failures=k_fail)
        sel = StoreMemory(store, policy).retrieve("games", "logical_deduction")
        lo, hi = policy.band
        different = sel.by_role("different")
        assert len(different) <= k_high and len(sel.by_role("failure")) <= k_fail
        assert len(sel.by_role("too_easy")) + len(sel.by_role("too_hard")) <= k_neg
        assert all(lo <= e.win_rate <= hi for e in different)
        assert [e.regret for e in different] == sorted((e.regret for e in different), reverse=True)  # one skill
        assert all(e.win_rate > hi for e in sel.by_role("too_easy"))
        assert all(e.win_rate < lo for e in sel.by_role("too_hard"))
        assert len(set(sel.ids)) == len(sel.ids)
        codes = [shingles(store.get_source(i)) for i in sel.ids]
        assert all(jaccard(a, b) < policy.near_duplicate for n, a in enumerate(codes) for b in codes[n + 1 :])
        in_band = sum(1 for wr, _, ok in envs if ok and lo <= wr <= hi)
        assert len(different) == min(k_high, in_band)  # distinct sources: nothing is skipped
    finally:
        store.close()
