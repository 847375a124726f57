"""The optional C path of registration (``spade_core._speedups``) registers exactly what the
pure-Python path registers.

Both paths run in this process: the Python one by setting ``registry._speedups`` to
``None`` (what ``SPADE_CORE_NO_C=1`` does at import). The rest of the suite runs whichever
path is active (the C one where it is built, as under CI).
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import importlib
import os
import pickle
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.envs.registration import EnvSpec
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.metadata import EnvStatus
from spade_core.store import EnvStore
from spade_core.store.id_snapshot import names_of

from spade_core import native, registry, stored_envs

from .test_registry import GUESS, clean_registry, guess_meta, home_with_store, puzzle_domain, run_python

__all__ = ["clean_registry", "puzzle_domain"]  # fixtures used here

try:
    _speedups: Any = importlib.import_module("spade_core._speedups")
except ImportError as exc:  # not built here: these tests say so, CI fails (first test)
    _speedups = None
    _WHY = str(exc)

needs_c = pytest.mark.skipif(_speedups is None, reason="the C extension spade_core._speedups is not built here")

URL = "sqlite:///native.db"


def test_the_extension_is_built_where_ci_runs() -> None:
    """CI builds the package on a clean checkout: there the extension must exist."""
    if _speedups is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"spade_core._speedups did not build in CI ({_WHY}); is a C compiler installed?")
        pytest.skip(f"spade_core._speedups is not built here ({_WHY}); the pure-Python path runs")
    assert native.speedups is (None if os.environ.get(native.DISABLE_VARIABLE, "") not in ("", "0") else _speedups)
    assert registry._speedups is native.speedups


def test_the_disable_variable_is_read_once_and_says_why() -> None:
    if native.speedups is None:
        assert native.reason.startswith(("disabled by SPADE_CORE_NO_C", "not built")) and not native.active()
    else:
        assert native.reason == "active" and native.active()


# --- the hot path: the same specs -----------------------------------------------------------


def described(spec: EnvSpec) -> tuple[Any, ...]:
    """Everything a user of the spec can see, derived fields included (which expands them)."""
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(EnvSpec)}
    return (type(spec), fields, spec.to_json(), pickle.loads(pickle.dumps(spec)), copy.deepcopy(spec))


def python_specs(gym_ids: list[str], names: list[str], url: str = URL) -> dict[str, EnvSpec]:
    return dict(zip(gym_ids, stored_envs.stored_specs(gym_ids, url, names), strict=True))


def c_specs(gym_ids: list[str], names: list[str], url: str = URL) -> dict[str, EnvSpec]:
    made: dict[str, EnvSpec] = {}
    _speedups.register_specs(made, stored_envs.spec_class(url), gym_ids, names)
    return made


#: A PostgreSQL URL whose server refuses at once (loopback, the discard port): a spec's derived
#: fields read the store and fall back when it cannot be reached; a host name to resolve
#: instead cost a DNS timeout per spec (100 s of this file on CI's machine).
UNREACHABLE_PG = "postgresql+psycopg://u@127.0.0.1:9/db"

ENV_IDS = st.lists(
    st.tuples(st.from_regex(r"[A-Za-z][A-Za-z0-9_.]{0,20}", fullmatch=True), st.integers(1, 10**9)),
    max_size=40,
    unique=True,
)


@needs_c
@settings(max_examples=80, deadline=None)
@given(env_ids=ENV_IDS, url=st.sampled_from(["sqlite:///s.db", UNREACHABLE_PG]))
def test_both_paths_make_the_same_specs_in_the_same_order(env_ids: list[tuple[str, int]], url: str) -> None:
    gym_ids = [f"spade/{name}-v{version}" for name, version in env_ids]
    names = names_of(gym_ids, "spade/")
    made, expected = c_specs(gym_ids, names, url), python_specs(gym_ids, names, url)
    assert list(made) == list(expected) == gym_ids
    for gym_id, spec in made.items():
        assert spec.id is gym_id and spec.name is names[gym_ids.index(gym_id)]  # the same objects, not copies
        assert vars(spec) == {}  # nothing derived until asked
        assert not gc.is_tracked(spec) and gc.is_tracked(expected[gym_id])
        assert described(spec) == described(expected[gym_id])
        assert (spec.version, spec.kwargs) == (
            int(gym_id.rpartition("-v")[2]),
            {"env_id": gym_id[6:], "store_url": url},
        )


@needs_c
def test_a_later_id_replaces_an_earlier_one_as_dict_update_does() -> None:
    gym_ids = ["spade/a-v1", "spade/b-v1", "spade/a-v1"]
    names = names_of(gym_ids, "spade/")
    before = {"spade/b-v1": "kept key order", "x": 1}
    made, expected = dict(before), dict(before)
    _speedups.register_specs(made, stored_envs.spec_class(URL), gym_ids, names)
    expected.update(python_specs(gym_ids, names))
    assert list(made) == list(expected) == ["spade/b-v1", "x", "spade/a-v1"]
    assert [described(s) for s in made.values() if isinstance(s, EnvSpec)] == [
        described(s) for s in expected.values() if isinstance(s, EnvSpec)
    ]


@needs_c
def test_repeated_registration_leaks_no_reference() -> None:
    gym_ids = [f"spade/leak{i}-v{i % 7 + 1}" for i in range(2_000)]
    names = names_of(gym_ids, "spade/")
    cls = stored_envs.spec_class("sqlite:///leak.db")
    probes = [cls, gym_ids[0], gym_ids[-1], names[0], names[-1]]
    c_specs(gym_ids, names)  # first use: nothing is cached lazily afterwards
    before, cls_refs = [sys.getrefcount(obj) for obj in probes], sys.getrefcount(cls)
    for _ in range(30):
        made: dict[str, EnvSpec] = {}
        _speedups.register_specs(made, cls, gym_ids, names)
        made[gym_ids[3]].kwargs  # noqa: B018  (an expanded spec is freed too)
        assert sys.getrefcount(cls) == cls_refs + len(gym_ids)  # each spec holds its class
        del made
    assert [sys.getrefcount(obj) for obj in probes] == before


# --- bad input: specific errors, nothing leaked, the collector as it was ------------------------


@needs_c
@pytest.mark.parametrize("enabled", [True, False])
def test_bad_items_are_named_and_what_came_before_stays_consistent(enabled: bool) -> None:
    cls = stored_envs.spec_class(URL)
    gym_ids: list[Any] = ["spade/a-v1", "spade/b-v1", 3, "spade/d-v1"]
    names = ["a", "b", "c", "d"]
    refs = sys.getrefcount(cls)
    (gc.enable if enabled else gc.disable)()
    try:
        made: dict[str, EnvSpec] = {}
        with pytest.raises(TypeError, match="item 2: gym id and name must be str, not int and str"):
            _speedups.register_specs(made, cls, gym_ids, names)
        assert gc.isenabled() == enabled
    finally:
        gc.enable()
    assert [(s.id, s.name) for s in made.values()] == [("spade/a-v1", "a"), ("spade/b-v1", "b")]
    del made
    assert sys.getrefcount(cls) == refs


@needs_c
@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (([], "cls", ["spade/a-v1"], ["a"]), TypeError, "registry must be a dict, not list"),
        (({}, "a class", ["spade/a-v1"], ["a"]), TypeError, "cls must be a class, not str"),
        (({}, "cls", ("spade/a-v1",), ["a"]), TypeError, "gym_ids and names must be lists, not tuple and list"),
        (({}, "cls", ["spade/a-v1"], ["a", "b"]), ValueError, "1 gym ids but 2 names"),
        (({}, EnvSpec, ["spade/a-v1"], ["a"]), TypeError, "EnvSpec has no slot id"),
        (({}, int, ["spade/a-v1"], ["a"]), TypeError, "int is not a class defined in Python"),
    ],
)
def test_wrong_arguments_are_refused_with_what_is_wrong(args: tuple[Any, ...], error: type, message: str) -> None:
    args = tuple(stored_envs.spec_class(URL) if a == "cls" else a for a in args)
    with pytest.raises(error, match=message):
        _speedups.register_specs(*args)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        _speedups.register_specs({}, stored_envs.spec_class(URL), [])


@needs_c
def test_a_class_whose_id_is_not_a_slot_is_refused() -> None:
    class Frozen(registry.StoredEnvSpec):
        __slots__ = ()
        id = property(lambda self: "x")

    with pytest.raises(TypeError, match="Frozen has no slot id"):
        _speedups.register_specs({}, Frozen, ["spade/a-v1"], ["a"])


def test_registering_names_of_another_length_is_an_error_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for speedups in {None, native.speedups}:
        monkeypatch.setattr(registry, "_speedups", speedups)
        with pytest.raises(ValueError, match="2 gym ids but 1 names"):
            registry._register_stored(["spade/a-v1", "spade/b-v1"], ["a"], URL, registry.Registration())


# --- whole registrations: the same registry --------------------------------------------------


def registry_view() -> list[tuple[Any, ...]]:
    """SPADE's entries in full, and the identity of the others (Gymnasium's own)."""
    return [
        (gym_id, described(spec) if gym_id.startswith("spade/") else id(spec)) for gym_id, spec in gym.registry.items()
    ]


def register_twice(db: Path, path: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Register a new store, change it (retire, admit, add), register again: every step's
    view. The store file (and its id snapshot) is removed first: both paths see the same URL."""
    for old in db.parent.glob(db.name + "*"):
        old.unlink()
    url = f"sqlite:///{db}"
    monkeypatch.setattr(registry, "_speedups", path)
    saved = dict(gym.registry)
    views: list[Any] = []
    try:
        with EnvStore(url) as store:
            for name in ("one", "two", "three", "seed_guess"):
                store.add(GUESS.read_text() + f"\n# {name}", guess_meta(name, status="admitted"))
            store.add(GUESS.read_text(), guess_meta("later"))
            first = registry.register(store)
            views.append(
                (first.stored, first.removed, first.problems, registry_view(), list(registry._registered_stored))
            )
            store.set_status("two-v1", EnvStatus.retired)
            store.set_status("later-v1", EnvStatus.admitted)
            store.add(GUESS.read_text() + "\n# v2", guess_meta("one"), new_version=True)
            store.set_status("one-v2", EnvStatus.admitted)
            second = registry.register(store, seeds=False)
            views.append((second.stored, second.removed, registry_view(), list(registry._registered_stored)))
    finally:
        gym.registry.clear()
        gym.registry.update(saved)
        registry._registered_stored.clear()
    return views


@needs_c
@pytest.mark.usefixtures("clean_registry", "puzzle_domain")
def test_both_paths_register_and_reregister_a_store_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.warns(RuntimeWarning, match="shadowed by seed environments.*spade/seed_guess-v1"):
        with_c = register_twice(tmp_path / "store.db", _speedups, monkeypatch)
    with pytest.warns(RuntimeWarning, match="shadowed by seed environments.*spade/seed_guess-v1"):
        with_python = register_twice(tmp_path / "store.db", None, monkeypatch)
    assert with_c[0][:2] == (3, 0) and with_c[1][:2] == (4, 1)  # one, two, three; then two retired
    assert "spade/two-v1" not in dict(with_c[1][2]) and "spade/one-v2" in dict(with_c[1][2])
    assert dict(with_c[0][3])["spade/seed_guess-v1"][1]["entry_point"] == registry.SEED_ENTRY_POINT
    assert with_c == with_python


@needs_c
@pytest.mark.usefixtures("clean_registry")
def test_store_specs_of_the_c_path_are_untracked_and_gc_is_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "_speedups", _speedups)
    gym_ids = [f"spade/gc{i}-v1" for i in range(3_000)]
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            registry._register_stored(gym_ids, None, URL, registry.Registration())
            assert gc.isenabled() == enabled
        finally:
            gc.enable()
    specs = [gym.registry[gym_id] for gym_id in gym_ids]
    assert not any(map(gc.is_tracked, specs))
    gc.collect()  # untracked specs and their lazily made fields survive collections
    assert [s.kwargs["env_id"] for s in specs[:2]] == ["gc0-v1", "gc1-v1"]


# --- interpreter exit ----------------------------------------------------------------------


@needs_c
def test_keep_alive_takes_one_reference_and_untracks() -> None:
    kept = {"a": [1]}
    refs = sys.getrefcount(kept)
    assert gc.is_tracked(kept)
    _speedups.keep_alive(kept)
    assert sys.getrefcount(kept) == refs + 1 and not gc.is_tracked(kept)


EXIT_PROBE = """
import atexit
import gymnasium as gym
def count():
    print("at exit:", sum(k.startswith("spade/guess") for k in gym.registry), flush=True)
atexit.register(count)  # registered before import spade_core: runs after its handler
import spade_core
from spade_core import native
atexit.register(count)  # registered after: runs before
print("c" if native.active() else "python", len(gym.registry) > 0, flush=True)
"""


@pytest.mark.parametrize("no_c", ["1", "0"])
def test_atexit_handlers_see_the_store_specs_as_documented(tmp_path: Path, no_c: str) -> None:
    if no_c == "0" and _speedups is None:
        pytest.skip("the C extension is not built here")
    home = home_with_store(tmp_path, in_process=True)
    out = run_python(EXIT_PROBE, home, extra_env={"SPADE_CORE_NO_C": no_c})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    if no_c == "1":  # Python path: released by spade_core's handler
        assert lines == ["python True", "at exit: 1", "at exit: 0"]
    else:  # C path: kept past the teardown
        assert lines == ["c True", "at exit: 1", "at exit: 1"]
