"""The environment store's contract (spade_core.store.EnvStore), on every backend."""

from __future__ import annotations

import itertools

import pytest
from spade_core.errors import EnvNotFound, InvalidTransition, StoreError
from spade_core.metadata import (
    TRANSITIONS,
    EnvStatus,
    Finding,
    StatsSnapshot,
    ValidationReport,
    code_hash,
)
from spade_core.store import EnvStore

from . import test_store_backends as backends
from .test_store_backends import env_source, meta

# fixtures: every test runs on SQLite and PostgreSQL
postgres_url, store_url, store = backends.postgres_url, backends.store_url, backends.store


def blob_count(store: EnvStore) -> int:
    from spade_core.store.schema import blobs
    from sqlalchemy import func, select

    with store._reading("test") as conn:
        return int(conn.execute(select(func.count()).select_from(blobs)).scalar_one())


# --- adding ----------------------------------------------------------------------------------


def test_add_fills_the_code_hash_and_id_and_get_returns_the_same_record(store: EnvStore) -> None:
    source = env_source("a")
    stored = store.add(source, meta("counter", description="counts"))
    assert stored.id == "counter-v1"
    assert stored.code_hash == code_hash(source)
    assert store.get("counter-v1") == stored
    assert store.get_source("counter-v1") == source


def test_adding_the_same_name_version_and_code_again_returns_the_existing_record(store: EnvStore) -> None:
    first = store.add(env_source("a"), meta("counter", description="first"))
    again = store.add(env_source("a"), meta("counter", description="second"))
    assert again == first
    assert store.count() == 1


def test_adding_other_code_under_an_existing_version_is_refused_and_changes_nothing(store: EnvStore) -> None:
    first = store.add(env_source("a"), meta("counter"))
    with pytest.raises(StoreError, match=r"counter-v1 already exists with different code.*new_version=True"):
        store.add(env_source("b"), meta("counter"))
    assert store.count() == 1
    assert store.get("counter-v1") == first
    assert store.get_source("counter-v1") == env_source("a")
    assert blob_count(store) == 1


def test_new_version_stores_other_code_as_the_next_version(store: EnvStore) -> None:
    store.add(env_source("a"), meta("counter"))
    v2 = store.add(env_source("b"), meta("counter"), new_version=True)
    v3 = store.add(env_source("c"), meta("counter"), new_version=True)
    assert (v2.id, v2.version, v3.id) == ("counter-v2", 2, "counter-v3")
    assert [m.version for m in store.versions("counter")] == [1, 2, 3]
    assert store.get_source("counter-v2") == env_source("b")


def test_new_version_with_code_already_stored_under_the_name_returns_that_version(store: EnvStore) -> None:
    store.add(env_source("a"), meta("counter"))
    v2 = store.add(env_source("b"), meta("counter"), new_version=True)
    assert store.add(env_source("b"), meta("counter"), new_version=True) == v2
    assert store.count(name="counter") == 2


def test_the_same_code_under_many_names_is_stored_once(store: EnvStore) -> None:
    for name in ("alpha", "beta", "gamma"):
        store.add(env_source("shared"), meta(name))
    assert blob_count(store) == 1
    assert {store.get(f"{n}-v1").code_hash for n in ("alpha", "beta", "gamma")} == {code_hash(env_source("shared"))}


def test_code_is_stored_with_normalised_line_endings(store: EnvStore) -> None:
    windows = env_source("crlf").replace("\n", "\r\n")
    stored = store.add(windows, meta("crlf"))
    assert store.get_source(stored.code_hash) == env_source("crlf")
    assert stored.code_hash == code_hash(env_source("crlf"))


def test_a_code_hash_that_does_not_match_the_source_is_refused(store: EnvStore) -> None:
    with pytest.raises(StoreError, match="does not match the source"):
        store.add(env_source("a"), meta("counter", code_hash=code_hash("something else")))
    assert store.count() == 0


@pytest.mark.parametrize("source", ["", "   \n", None, b"class XEnv: pass"])
def test_a_missing_or_non_text_source_is_refused(store: EnvStore, source: object) -> None:
    with pytest.raises(StoreError, match="counter-v1: source"):
        store.add(source, meta("counter"))  # type: ignore[arg-type]
    assert store.count() == 0


def test_metadata_must_be_an_env_metadata(store: EnvStore) -> None:
    with pytest.raises(StoreError, match="expects EnvMetadata, got dict"):
        store.add(env_source(), {"name": "counter"})  # type: ignore[arg-type]


def test_an_environment_cannot_be_its_own_parent(store: EnvStore) -> None:
    with pytest.raises(StoreError, match="own parent"):
        store.add(env_source(), meta("counter", parent_ids=["counter-v1"]))
    store.add(env_source("a"), meta("counter"))
    with pytest.raises(StoreError, match="counter-v2: an environment cannot be its own parent"):
        store.add(env_source("b"), meta("counter", parent_ids=["counter-v2"]), new_version=True)
    assert store.count() == 1


@pytest.mark.parametrize("version", [2**31, 2**63, 2**70])
def test_a_version_beyond_what_every_backend_holds_is_refused_naming_the_limit(store: EnvStore, version: int) -> None:
    with pytest.raises(StoreError, match=rf"counter-v{version}: version {version} is above the largest .*2147483647"):
        store.add(env_source(), meta("counter", version=version))
    assert store.add(env_source(), meta("counter", version=2**31 - 1)).version == 2**31 - 1
    with pytest.raises(StoreError, match="above the largest"):  # no room for a next version either
        store.add(env_source("other"), meta("counter", version=2**31 - 1), new_version=True)
    assert store.count() == 1


def test_metadata_that_would_not_come_back_equal_is_refused_before_writing(store: EnvStore) -> None:
    report = ValidationReport(
        passed=True, findings=[Finding(stage="fuzz", ok=True, message="m", details={"pair": (1, 2)})]
    )
    with pytest.raises(StoreError, match=r"would not survive storage unchanged \(fields: validation\)"):
        store.add(env_source(), meta("counter", validation=report))
    assert store.count() == 0


def test_add_many_stores_in_order_and_applies_the_single_add_rules(store: EnvStore) -> None:
    store.add(env_source("old"), meta("kept"))
    items = [
        (env_source("n0"), meta("n0")),
        (env_source("old"), meta("kept")),  # idempotent
        (env_source("n1"), meta("n1", parent_ids=["n0-v1"])),
        (env_source("n0"), meta("n0")),  # repeated in the batch
        (env_source("n1b"), meta("n1")),  # conflicting: becomes n1-v2
    ]
    out = store.add_many(items, new_version=True, batch_size=2)
    assert [m.id for m in out] == ["n0-v1", "kept-v1", "n1-v1", "n0-v1", "n1-v2"]
    assert store.count() == 4
    assert [m.id for m in store.lineage("n1-v1")] == ["n0-v1"]


def test_a_failing_item_aborts_its_batch_only(store: EnvStore) -> None:
    store.add(env_source("a"), meta("taken"))
    items = [(env_source(f"x{i}"), meta(f"x{i}")) for i in range(4)]
    items.insert(3, (env_source("b"), meta("taken")))  # conflicts, new_version=False
    with pytest.raises(StoreError, match="taken-v1 already exists"):
        store.add_many(items, batch_size=2)
    # batch 1 (x0, x1) committed; batch 2 (x2, taken) rolled back; x3 never reached
    assert sorted(m.id for m in store.find()) == ["taken-v1", "x0-v1", "x1-v1"]


# --- reading ---------------------------------------------------------------------------------


def test_get_of_an_unknown_id_raises_env_not_found_naming_it(store: EnvStore) -> None:
    with pytest.raises(EnvNotFound, match="'nope-v1'") as info:
        store.get("nope-v1")
    assert isinstance(info.value, StoreError) and isinstance(info.value, KeyError)
    assert store.where in str(info.value)


def test_get_source_accepts_an_id_or_a_hash_and_names_what_is_missing(store: EnvStore) -> None:
    stored = store.add(env_source("a"), meta("counter"))
    assert store.get_source(stored.code_hash) == store.get_source(stored.id) == env_source("a")
    with pytest.raises(EnvNotFound, match="no code hash 'f{64}'".replace("f{64}", "f" * 64)):
        store.get_source("f" * 64)
    with pytest.raises(EnvNotFound, match="no environment 'other-v1'"):
        store.get_source("other-v1")


def test_resolve_accepts_ids_gym_ids_and_names(store: EnvStore) -> None:
    store.add(env_source("a"), meta("counter"))
    store.add(env_source("b"), meta("counter"), new_version=True)
    assert store.resolve("counter-v1").version == 1
    assert store.resolve("spade/counter-v1").version == 1
    assert store.resolve("counter").version == 2
    with pytest.raises(EnvNotFound, match="'missing'"):
        store.resolve("missing")


@pytest.fixture
def populated(store: EnvStore) -> EnvStore:
    rows = [
        ("a", "games", "logic", "admitted"),
        ("b", "games", "logic", "candidate"),
        ("c", "games", "memory", "admitted"),
        ("d", "tooluse", "logic", "retired"),
        ("e", "tooluse", "planning", "admitted"),
    ]
    for name, domain, skill, status in rows:
        store.add(env_source(name), meta(name, domain=domain, skill=skill, status=status))
    return store


@pytest.mark.parametrize(
    "filters,expected",
    [
        ({}, ["a-v1", "b-v1", "c-v1", "d-v1", "e-v1"]),
        ({"domain": "games"}, ["a-v1", "b-v1", "c-v1"]),
        ({"skill": "logic"}, ["a-v1", "b-v1", "d-v1"]),
        ({"status": "admitted"}, ["a-v1", "c-v1", "e-v1"]),
        ({"status": EnvStatus.retired}, ["d-v1"]),
        ({"domain": "games", "skill": "logic", "status": "admitted"}, ["a-v1"]),
        ({"name": "e"}, ["e-v1"]),
        ({"domain": "nothing"}, []),
    ],
)
def test_find_and_count_apply_every_filter(populated: EnvStore, filters: dict, expected: list[str]) -> None:
    assert [m.id for m in populated.find(**filters)] == expected
    assert populated.count(**filters) == len(expected)


def test_find_pages_with_limit_and_offset(populated: EnvStore) -> None:
    pages = [[m.id for m in populated.find(limit=2, offset=o)] for o in (0, 2, 4)]
    assert pages == [["a-v1", "b-v1"], ["c-v1", "d-v1"], ["e-v1"]]
    assert populated.find(limit=0) == []


def test_find_pages_after_an_id_without_repeating_or_skipping_when_statuses_change(populated: EnvStore) -> None:
    def ids(found: list) -> list[str]:
        return [m.id for m in found]

    assert ids(populated.find(after="a-v1")) == ["b-v1", "c-v1", "d-v1", "e-v1"]
    assert ids(populated.find(after="e-v1")) == []
    # past an id the filters do not select (b is a candidate), with the filters and a limit
    assert ids(populated.find(status="admitted", after="b-v1")) == ["c-v1", "e-v1"]
    assert ids(populated.find(domain="games", after="a-v1", limit=1)) == ["b-v1"]
    pages, after = [], None
    while page := populated.find(status="admitted", after=after, limit=1):
        pages.append(ids(page))
        after = page[-1].id
    assert pages == [["a-v1"], ["c-v1"], ["e-v1"]]
    # between two pages, b (inserted before the cursor) is admitted and e retired: paging
    # after the last id neither repeats c nor skips anything still admitted; an offset does
    first = ids(populated.find(status="admitted", limit=2))
    populated.set_status("b-v1", EnvStatus.admitted)
    assert ids(populated.find(status="admitted", after=first[-1], limit=2)) == ["e-v1"]
    assert ids(populated.find(status="admitted", offset=2, limit=2)) == ["c-v1", "e-v1"]  # c again
    with pytest.raises(EnvNotFound, match="no environment 'nope-v1' in the store"):
        populated.find(after="nope-v1")


@pytest.mark.parametrize(
    "kwargs,message",
    [({"status": "published"}, "unknown status 'published'"), ({"limit": -1}, "limit"), ({"offset": -3}, "offset")],
)
def test_find_rejects_bad_filters(populated: EnvStore, kwargs: dict, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        populated.find(**kwargs)


def test_admitted_ids_lists_admitted_environments_in_insertion_order(populated: EnvStore) -> None:
    assert populated.admitted_ids() == ["a-v1", "c-v1", "e-v1"]


def test_versions_of_an_unknown_name_is_empty(store: EnvStore) -> None:
    assert store.versions("nobody") == []


# --- lineage ---------------------------------------------------------------------------------


@pytest.fixture
def family(store: EnvStore) -> EnvStore:
    r"""root -> (left, right) -> child(left, right) -> grandchild; an external parent too.

    root    outsider(not stored)
    /  \       |
  left right   |
    \  /       |
    child -----'
      |
    grandchild
    """
    store.add(env_source("root"), meta("root"))
    store.add(env_source("left"), meta("left", parent_ids=["root-v1"]))
    store.add(env_source("right"), meta("right", parent_ids=["root-v1"]))
    store.add(env_source("child"), meta("child", parent_ids=["right-v1", "outsider-v1", "left-v1"]))
    store.add(env_source("grand"), meta("grandchild", parent_ids=["child-v1"]))
    return store


def test_lineage_lists_ancestors_nearest_first_skipping_unknown_ones(family: EnvStore) -> None:
    assert [m.id for m in family.lineage("grandchild-v1")] == ["child-v1", "right-v1", "left-v1", "root-v1"]
    assert family.lineage("root-v1") == []


def test_descendants_lists_derived_environments_nearest_first(family: EnvStore) -> None:
    assert [m.id for m in family.descendants("root-v1")] == ["left-v1", "right-v1", "child-v1", "grandchild-v1"]
    assert family.descendants("grandchild-v1") == []


def test_lineage_of_an_unknown_id_raises(family: EnvStore) -> None:
    with pytest.raises(EnvNotFound, match="'ghost-v1'"):
        family.lineage("ghost-v1")
    with pytest.raises(EnvNotFound, match="'ghost-v1'"):
        family.descendants("ghost-v1")


def test_lineage_terminates_on_cycles(store: EnvStore) -> None:
    # Parents need not exist when added (imported pools), so cycles are possible.
    store.add(env_source("p"), meta("p", parent_ids=["q-v1"]))
    store.add(env_source("q"), meta("q", parent_ids=["p-v1"]))
    assert [m.id for m in store.lineage("p-v1")] == ["q-v1"]
    assert [m.id for m in store.descendants("p-v1")] == ["q-v1"]


# --- updates ---------------------------------------------------------------------------------


def test_record_stats_keeps_one_entry_per_policy_snapshot_newest_last(store: EnvStore) -> None:
    store.add(env_source(), meta("counter"))
    s1 = StatsSnapshot(policy_snapshot="step-4", samples=32, win_rate=0.25, regret=0.1)
    s2 = StatsSnapshot(policy_snapshot="step-8", samples=32, win_rate=0.5)
    s1b = StatsSnapshot(policy_snapshot="step-4", samples=64, win_rate=0.3)
    store.record_stats("counter-v1", s1)
    store.record_stats("counter-v1", s2)
    updated = store.record_stats("counter-v1", s1b)
    assert updated.stats == [s2, s1b]
    assert store.get("counter-v1").stats == [s2, s1b]
    assert updated.latest_stats == s1b
    assert updated.updated_at >= updated.created_at


def test_record_stats_rejects_other_types_and_unknown_ids(store: EnvStore) -> None:
    store.add(env_source(), meta("counter"))
    with pytest.raises(StoreError, match="expects StatsSnapshot"):
        store.record_stats("counter-v1", {"win_rate": 0.5})  # type: ignore[arg-type]
    with pytest.raises(EnvNotFound, match="'nope-v1'"):
        store.record_stats("nope-v1", StatsSnapshot(policy_snapshot="s", samples=1, win_rate=0.0))


@pytest.mark.parametrize("start,target", list(itertools.product(EnvStatus, EnvStatus)))
def test_set_status_follows_the_lifecycle(store: EnvStore, start: EnvStatus, target: EnvStatus) -> None:
    store.add(env_source(), meta("counter", status=start))
    if target == start or target in TRANSITIONS[start]:
        assert store.set_status("counter-v1", target).status == target
        assert store.get("counter-v1").status == target
        assert ("counter-v1" in store.admitted_ids()) == (target == EnvStatus.admitted)
    else:
        with pytest.raises(InvalidTransition, match=f"from {start.value} to {target.value}"):
            store.set_status("counter-v1", target)
        assert store.get("counter-v1").status == start
        assert store.count(status=start) == 1


def test_set_status_rejects_unknown_statuses(store: EnvStore) -> None:
    store.add(env_source(), meta("counter"))
    with pytest.raises(StoreError, match="unknown status 'live'"):
        store.set_status("counter-v1", "live")


def test_set_validation_and_set_hint_update_the_record(store: EnvStore) -> None:
    store.add(env_source(), meta("counter"))
    report = ValidationReport(passed=False, failed_stage="replay", reasons=["solution fails"])
    assert store.set_validation("counter-v1", report).validation == report
    assert store.set_hint("counter-v1", "count slowly").hint == "count slowly"
    got = store.get("counter-v1")
    assert (got.validation, got.hint) == (report, "count slowly")
    assert store.set_hint("counter-v1", None).hint is None


def test_an_invalid_update_is_refused_and_changes_nothing(store: EnvStore) -> None:
    store.add(env_source(), meta("counter", hint="old"))
    with pytest.raises(StoreError, match="counter-v1: invalid update"):
        store.set_hint("counter-v1", "x" * 5000)
    with pytest.raises(StoreError, match="expects ValidationReport"):
        store.set_validation("counter-v1", "passed")  # type: ignore[arg-type]
    assert store.get("counter-v1").hint == "old"


# --- lifecycle -------------------------------------------------------------------------------


def test_a_closed_store_refuses_work_with_a_clear_error(store_url: str) -> None:
    with EnvStore(store_url) as store:
        store.add(env_source(), meta("counter"))
    with pytest.raises(StoreError, match="the store is closed"):
        store.get("counter-v1")
    with EnvStore(store_url, create=False) as reopened:
        assert reopened.get("counter-v1").id == "counter-v1"
