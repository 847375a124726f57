"""The registry's snapshot of admitted ids (spade_core.store.id_snapshot): used only while
the store's admitted set is unchanged, rebuilt after every change, never a reason for
registration to fail."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_core.metadata import TRANSITIONS, EnvMetadata, EnvStatus
from spade_core.names import NAME_RE
from spade_core.store import EnvStore, id_snapshot, sqlite_reader

from spade_core import registry

from .test_store_backends import env_source

PREFIX = "spade/"


@pytest.fixture
def clean_registry() -> Iterator[None]:
    saved = dict(gym.registry)
    stored = list(registry._registered_stored)
    yield
    gym.registry.clear()
    gym.registry.update(saved)
    registry._registered_stored[:] = stored


def meta(name: str, status: EnvStatus = EnvStatus.admitted) -> EnvMetadata:
    return EnvMetadata(name=name, domain="d", skill="s", status=status)


def filled(path: Path, admitted: int, candidates: int = 0) -> Path:
    with EnvStore(f"sqlite:///{path}") as store:
        store.add_many((env_source(f"a{i}"), meta(f"a{i}")) for i in range(admitted))
        store.add_many((env_source(f"c{i}"), meta(f"c{i}", EnvStatus.candidate)) for i in range(candidates))
    return path


def read(path: Path) -> tuple[list[str], list[str]]:
    found = sqlite_reader.admitted_snapshot(path, PREFIX)
    assert found is not None
    return found


def test_the_first_read_writes_a_snapshot_that_the_next_read_uses(tmp_path: Path) -> None:
    path = filled(tmp_path / "store.db", admitted=3, candidates=2)
    ids, names = read(path)
    assert sorted(ids) == ["spade/a0-v1", "spade/a1-v1", "spade/a2-v1"]
    assert sorted(names) == ["a0", "a1", "a2"]
    snapshot = id_snapshot.snapshot_path(path)
    assert snapshot.is_file()
    # Proof that the second read comes from the file: an id only the file holds appears.
    _, _, version, prefix, _ = snapshot.read_text().partition("\n")[0].split(" ")
    id_snapshot.save(path, version, prefix, [*ids, "spade/only_in_file-v1"], [*names, "only_in_file"])
    assert "spade/only_in_file-v1" in read(path)[0]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda s: s.add(env_source("new"), meta("new")), id="admitted-add"),
        pytest.param(lambda s: s.set_status("a1-v1", EnvStatus.retired), id="retire"),
        pytest.param(lambda s: s.set_status("c0-v1", EnvStatus.admitted), id="admit"),
    ],
)
def test_every_change_of_the_admitted_set_invalidates_the_snapshot(tmp_path: Path, change) -> None:  # type: ignore[no-untyped-def]
    path = filled(tmp_path / "store.db", admitted=3, candidates=2)
    read(path)
    with EnvStore(f"sqlite:///{path}") as store:
        change(store)
        expected = sorted(PREFIX + i for i in store.admitted_ids())
    assert sorted(read(path)[0]) == expected


def test_a_candidate_or_a_stats_update_keeps_the_snapshot(tmp_path: Path) -> None:
    path = filled(tmp_path / "store.db", admitted=2)
    read(path)
    before = id_snapshot.snapshot_path(path).read_text()
    with EnvStore(f"sqlite:///{path}") as store:
        store.add(env_source("cand"), meta("cand", EnvStatus.candidate))
        store.set_hint("a0-v1", "try harder")
    read(path)
    assert id_snapshot.snapshot_path(path).read_text() == before


def test_writes_by_other_programs_invalidate_it_too(tmp_path: Path) -> None:
    """The triggers live in the database, so raw SQL (a script, the sqlite3 shell) counts."""
    path = filled(tmp_path / "store.db", admitted=3)
    read(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE envs SET status = 'retired' WHERE id = 'a2-v1'")
    assert sorted(read(path)[0]) == ["spade/a0-v1", "spade/a1-v1"]


def test_copies_that_diverge_never_share_a_version(tmp_path: Path) -> None:
    original = filled(tmp_path / "one" / "store.db", admitted=2, candidates=2)
    copy = tmp_path / "two" / "store.db"
    copy.parent.mkdir()
    shutil.copyfile(original, copy)
    for path, env_id in ((original, "c0-v1"), (copy, "c1-v1")):
        with EnvStore(f"sqlite:///{path}") as store:
            store.set_status(env_id, EnvStatus.admitted)
    read(original)
    shutil.copyfile(id_snapshot.snapshot_path(original), id_snapshot.snapshot_path(copy))  # the wrong snapshot
    assert sorted(read(copy)[0]) == ["spade/a0-v1", "spade/a1-v1", "spade/c1-v1"]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"\xff\xfe garbage"), id="not-utf8"),
        pytest.param(lambda p: p.write_text("spade-id-snapshot 1"), id="header-only"),
        pytest.param(lambda p: p.write_text(p.read_text().replace("\0", "")), id="no-separator"),
        pytest.param(lambda p: p.write_text(p.read_text() + "\nextra_name"), id="counts-differ"),
    ],
)
def test_a_damaged_snapshot_is_ignored_and_rewritten(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    path = filled(tmp_path / "store.db", admitted=3)
    expected = sorted(read(path)[0])
    damage(id_snapshot.snapshot_path(path))
    assert sorted(read(path)[0]) == expected
    assert sorted(read(path)[0]) == expected


_NAMES = st.from_regex(NAME_RE, fullmatch=True).filter(lambda name: len(name) <= 40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(_NAMES, max_size=6),
    cut=st.integers(0, 200),
    extra=st.sampled_from(["", "\0", "\n", "\nx\0y", "x"]),
)
def test_a_snapshot_reads_back_what_was_saved_and_nothing_else(tmp_path: Path, names: list[str], cut: int, extra: str) -> None:
    """save -> load round trip; a file cut short or grown (a writer that died, another
    program appending) is not read. (A change that keeps the length is not detected: the
    file is a cache, replaced atomically, in the user's own SPADE_HOME.)"""
    store = tmp_path / "store.db"
    gym_ids = [f"spade/{name}-v{i}" for i, name in enumerate(names)]
    id_snapshot.save(store, "7", "spade/", gym_ids, names)
    assert id_snapshot.load(store, "7", "spade/") == (gym_ids, names)
    assert id_snapshot.load(store, "8", "spade/") is None
    target = id_snapshot.snapshot_path(store)
    text = target.read_text(encoding="utf-8")
    damaged = text[: len(text) - cut % (len(text) + 1)] if cut else text + extra
    target.write_text(damaged, encoding="utf-8")
    assert id_snapshot.load(store, "7", "spade/") == (None if damaged != text else (gym_ids, names))


def test_an_unwritable_place_for_the_snapshot_is_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = filled(tmp_path / "store.db", admitted=2)
    monkeypatch.setattr(id_snapshot, "snapshot_path", lambda p: tmp_path / "no" / "such" / "dir" / "ids")
    assert sorted(read(path)[0]) == ["spade/a0-v1", "spade/a1-v1"]
    assert not (tmp_path / "no").exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "admit", "retire", "register"]), st.integers(0, 7)), min_size=1, max_size=12
    )
)
@pytest.mark.usefixtures("clean_registry")
def test_registration_always_equals_the_admitted_set(tmp_path_factory: pytest.TempPathFactory, steps) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("snap") / "store.db"
    url = f"sqlite:///{path}"
    with EnvStore(url) as store:
        for op, k in steps:
            name = f"e{k}"
            if op == "add":
                store.add(env_source(name), meta(name, EnvStatus.candidate))
            elif op in ("admit", "retire") and store.count(name=name):
                current = store.get(f"{name}-v1").status
                target = EnvStatus.admitted if op == "admit" else EnvStatus.retired
                if target in TRANSITIONS[current]:
                    store.set_status(f"{name}-v1", target)
            registry.register(url, seeds=False)
            registered = sorted(g for g, s in gym.registry.items() if isinstance(s, registry.StoredEnvSpec))
            assert registered == sorted(PREFIX + i for i in store.admitted_ids())
            assert all(gym.spec(g).name == g[len(PREFIX) :].rpartition("-v")[0] for g in registered)
