"""Invariants of the store that hold for all inputs (hypothesis), on every backend."""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_core.errors import InvalidTransition
from spade_core.metadata import TRANSITIONS, EnvMetadata, EnvStatus, code_hash
from spade_core.store import EnvStore

from . import test_store_backends as backends
from .strategies import env_metadata
from .test_store_backends import env_source

postgres_url, store_url, store = backends.postgres_url, backends.store_url, backends.store

PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
_unique = itertools.count()


# --- properties -----------------------------------------------------------------------------


@PROPERTY
@given(m=env_metadata(unique_names=True, with_code_hash=False))
def test_any_valid_metadata_comes_back_equal(store: EnvStore, m: EnvMetadata) -> None:
    source = env_source(m.name)
    stored = store.add(source, m)
    expected = m.model_copy(update={"code_hash": code_hash(source)})
    assert stored == expected
    assert store.get(m.id) == expected
    assert store.find(name=m.name) == [expected]


@PROPERTY
@given(
    picks=st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1, max_size=12),
)
def test_content_addressing_stores_each_distinct_code_once(
    store: EnvStore, picks: list[tuple[int, bool]]
) -> None:
    tag = next(_unique)
    pool = [env_source(f"pool-{tag}-{k}") for k in range(6)]
    before = store.count()
    for i, (k, crlf) in enumerate(picks):
        source = pool[k].replace("\n", "\r\n") if crlf else pool[k]
        stored = store.add(source, EnvMetadata(name=f"ca{tag}_{i}", domain="d", skill="s"))
        assert store.get_source(stored.id) == pool[k]
    used = {pool[k] for k, _ in picks}
    for code in used:
        assert store.get_source(code_hash(code)) == code
    hashes = {m.code_hash for m in store.find() if m.name.startswith(f"ca{tag}_")}
    assert hashes == {code_hash(c) for c in used}
    assert store.count() == before + len(picks)
    assert _blob_count_for(store, [code_hash(c) for c in pool]) == len(used)


def _blob_count_for(store: EnvStore, hashes: list[str]) -> int:
    from spade_core.store.schema import blobs
    from sqlalchemy import func, select

    with store._reading("test") as conn:
        return int(conn.execute(select(func.count()).select_from(blobs).where(blobs.c.code_hash.in_(hashes))).scalar_one())


@settings(PROPERTY, max_examples=15)
@given(
    plan=st.lists(
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=6), min_size=2, max_size=4
    )
)
def test_concurrent_writers_give_each_distinct_code_exactly_one_version(
    store_url: str, plan: list[list[tuple[int, int]]]
) -> None:
    """Writers (each with its own store handle) add (name, code) pairs with new_version=True
    at the same time: afterwards every name holds each code it was given exactly once, as
    versions 1..k without gaps, whatever the interleaving."""
    tag = next(_unique)
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(plan))

    def writer(items: list[tuple[int, int]]) -> None:
        try:
            with EnvStore(store_url) as mine:
                barrier.wait(30)
                for name_k, code_k in items:
                    mine.add(
                        env_source(f"c{tag}-{name_k}-{code_k}"),
                        EnvMetadata(name=f"cw{tag}_{name_k}", domain="d", skill="s"),
                        new_version=True,
                    )
        except BaseException as exc:  # reported below, with the plan
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(items,)) for items in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    with EnvStore(store_url) as check:
        for name_k in {n for items in plan for n, _ in items}:
            versions = check.versions(f"cw{tag}_{name_k}")
            assert [m.version for m in versions] == list(range(1, len(versions) + 1))
            codes = [check.get_source(m.id) for m in versions]
            wanted = {env_source(f"c{tag}-{name_k}-{c}") for items in plan for n, c in items if n == name_k}
            assert sorted(codes) == sorted(wanted)


@PROPERTY
@given(start=st.sampled_from(EnvStatus), targets=st.lists(st.sampled_from(EnvStatus), max_size=8))
def test_status_changes_follow_the_transition_table(
    store: EnvStore, start: EnvStatus, targets: list[EnvStatus]
) -> None:
    env_id = store.add(env_source("lifecycle"), EnvMetadata(name=f"lc{next(_unique)}", domain="d", skill="s", status=start)).id
    current = start
    for target in targets:
        if target == current or target in TRANSITIONS[current]:
            current = store.set_status(env_id, target).status
        else:
            with pytest.raises(InvalidTransition):
                store.set_status(env_id, target)
        assert store.get(env_id).status == current
        assert (env_id in store.admitted_ids()) == (current == EnvStatus.admitted)
