"""Gymnasium registration (spade_core.registry): what ``import spade_core`` registers,
how ``gymnasium.make`` builds each kind of environment, and that nothing the store or a
plugin does can break the import."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
import textwrap
import types
import warnings
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.envs.registration import EnvSpec
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.config import SpadeConfig
from spade_core.domains import Domain, SeedEnv
from spade_core.env import ReferenceEnvAdapter
from spade_core.errors import StoreError
from spade_core.hookspecs import hookimpl
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import SpadePlugins, reset_plugins
from spade_core.runners import EnvRunner
from spade_core.sandbox_settings import SandboxSettings
from spade_core.store import EnvStore

from spade_core import registry, seed_index, stored_envs

from . import test_store_backends as backends

postgres_url, store_url = backends.postgres_url, backends.store_url

FIXTURES = Path(__file__).parent / "fixtures" / "reference_envs"
GUESS = FIXTURES / "guess_number.py"


def guess_meta(name: str = "guess", **fields: object) -> EnvMetadata:
    fields.setdefault("domain", "puzzles")
    fields.setdefault("skill", "search")
    fields.setdefault("max_turns", 6)
    return EnvMetadata(name=name, **fields)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Gymnasium's registry and this module's bookkeeping as they were before the test."""
    saved = dict(gym.registry)
    seeds, stored = set(registry._registered_seeds), list(registry._registered_stored)
    yield
    gym.registry.clear()
    gym.registry.update(saved)
    registry._registered_seeds.clear()
    registry._registered_seeds.update(seeds)
    registry._registered_stored[:] = stored


class PuzzlePlugin:
    """A domain plugin with one seed environment (the guess-number fixture)."""

    def __init__(self, seeds: tuple[SeedEnv, ...], allowed: frozenset[str] = frozenset()) -> None:
        self.domain = Domain(
            name="puzzles",
            description="test puzzles",
            skills=("search",),
            prompt_spec="write puzzles",
            seed_envs=seeds,
            allowed_modules=allowed,
        )

    @hookimpl
    def spade_register_domains(self, register):  # type: ignore[no-untyped-def]
        register(self.domain)


class RecordingRunnerPlugin:
    """A plugin registering the ``sandbox`` env runner as a test double of spade-sandbox's:
    its ``make`` and ``prepare`` (in the module ``spade_test_runner``) record their calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, prepare: bool = True) -> None:
        self.events: list[tuple[str, object]] = []
        module = types.ModuleType("spade_test_runner")
        module.make = lambda source, **options: self.events.append(("make", {"source": source, **options})) or self  # type: ignore[attr-defined]
        module.prepare = lambda: self.events.append(("prepare", None))  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "spade_test_runner", module)
        self.runner = EnvRunner(
            "sandbox", make="spade_test_runner:make", prepare="spade_test_runner:prepare" if prepare else None
        )

    @hookimpl
    def spade_register_env_runners(self, register):  # type: ignore[no-untyped-def]
        register(self.runner)


@pytest.fixture
def puzzle_domain() -> Iterator[PuzzlePlugin]:
    plugin = PuzzlePlugin(
        (SeedEnv(name="seed_guess", skill="search", path=GUESS, max_turns=4),), allowed=frozenset({"math", "re"})
    )
    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(plugin, name="puzzles")
    reset_plugins(plugins)
    yield plugin
    reset_plugins(None)


def run_python(
    code: str, home: Path, *, cwd: Path | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter with SPADE_HOME=home (the isolation a real user has)."""
    env = {**os.environ, "SPADE_HOME": str(home)}
    env.pop("SPADE_PLUGINS", None)
    env.pop("SPADE_SEED_INDEX", None)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or home,
        timeout=120,
    )


def home_with_store(tmp_path: Path, *, in_process: bool) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    with EnvStore(f"sqlite:///{home / 'store.db'}") as store:
        source = GUESS.read_text()
        store.add(source, guess_meta("guess", status="admitted"))
        store.add(source + "\n# b", guess_meta("pending"))
        store.add(source + "\n# c", guess_meta("gone", status="retired"))
    if in_process:
        (home / "spade.toml").write_text('[spade]\nstore_envs_run = "in-process"\n')
    return home


# --- a fresh interpreter --------------------------------------------------------------------


def test_gym_make_of_an_admitted_store_env_works_in_a_fresh_interpreter(tmp_path: Path) -> None:
    home = home_with_store(tmp_path, in_process=True)
    out = run_python(
        """
        import gymnasium as gym
        env = gym.make("spade_core:spade/guess-v1")
        obs, info = env.reset(seed=3)
        steps = [env.step("\\\\boxed{32}") for _ in range(6)]
        ids = sorted(k for k in gym.registry if k in ("spade/guess-v1", "spade/pending-v1", "spade/gone-v1"))
        print(type(env.unwrapped).__name__, "|", obs[:20], "|", steps[-1][3] or steps[-1][2], "|", ids)
        """,
        home,
    )
    assert out.returncode == 0, out.stderr
    kind, obs, ended, ids = (part.strip() for part in out.stdout.split("|"))
    assert kind == "ReferenceEnvAdapter"
    assert obs.startswith("I am thinking of")
    assert ended == "True"  # max_turns=6 from the metadata ends the episode
    assert ids == "['spade/guess-v1']"  # candidates and retired envs are not registered


def test_importing_with_no_store_creates_no_store_and_warns_nothing(tmp_path: Path) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()
    out = run_python("import warnings; warnings.simplefilter('error'); import spade_core", home)
    assert out.returncode == 0, out.stderr
    # only the seed index (a cache, see spade_core.seed_index) is written
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == ["cache", "cache/seed-index.json"]


def test_importing_never_creates_spade_home(tmp_path: Path) -> None:
    home = tmp_path / "no-home"
    out = run_python("import spade_core", home, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert not home.exists()


def test_the_import_path_reads_a_sqlite_store_without_sqlalchemy(tmp_path: Path) -> None:
    home = home_with_store(tmp_path, in_process=False)
    out = run_python(
        "import sys, spade_core, gymnasium as gym; "
        "print('spade/guess-v1' in gym.registry, 'sqlalchemy' in sys.modules)",
        home,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "sandbox"])
def test_import_and_make_of_a_stored_env_do_not_import_pydantic_or_sqlalchemy(tmp_path: Path, in_process: bool) -> None:
    """Both cost more than the whole import budget (the sandbox case checks the import
    only: spade_sandbox's own modules use pydantic); every installed plugin is loaded here,
    so a plugin module importing ``spade_core.metadata`` (pydantic) at load time fails it:
    such modules take ``ActionFormat``, ``NAME_RE`` and ``code_hash`` from ``spade_core.names``."""
    home = home_with_store(tmp_path, in_process=in_process)
    make = 'gym.make("spade/guess-v1").reset(seed=1)' if in_process else ""
    out = run_python(
        f"""
        import sys
        import gymnasium as gym
        import spade_core
        {make}
        heavy = sorted(m for m in ("pydantic", "sqlalchemy") if m in sys.modules)
        print("heavy:", heavy)
        """,
        home,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "heavy: []", out.stdout


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"\x00garbage" * 500), id="garbage"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[:60]), id="truncated"),
    ],
)
def test_a_broken_store_warns_naming_the_file_and_the_import_survives(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    count = """
        import warnings
        warnings.simplefilter("always")
        import spade_core, gymnasium as gym
        print(sum(k.startswith("spade/") for k in gym.registry))
        """
    healthy_home = tmp_path / "no-store"
    healthy_home.mkdir()
    healthy = run_python(count, healthy_home)
    assert healthy.returncode == 0, healthy.stderr
    home = home_with_store(tmp_path, in_process=False)
    damage(home / "store.db")
    out = run_python(count, home)
    assert out.returncode == 0, out.stderr
    assert "were not registered" in out.stderr and str(home / "store.db") in out.stderr
    assert "Traceback" not in out.stderr
    assert int(out.stdout) == int(healthy.stdout)  # every plugin seed is still registered


def test_store_code_is_refused_without_the_sandbox_unless_opted_in(tmp_path: Path) -> None:
    """No loaded plugin provides the ``sandbox`` runner (here: SPADE_PLUGINS leaves
    spade-sandbox out, as if it were not installed): the make refuses, saying how to opt in."""
    home = home_with_store(tmp_path, in_process=False)
    out = run_python(
        """
        import gymnasium as gym
        from spade_core.errors import UntrustedCodeError
        try:
            gym.make("spade_core:spade/guess-v1")
        except UntrustedCodeError as exc:
            print("refused:", exc)
        print("sandbox imported:", "spade_sandbox" in __import__("sys").modules)
        """,
        home,
        extra_env={"SPADE_PLUGINS": "games"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused: guess-v1 comes from the store and is untrusted: it runs only in the sandbox")
    assert "no loaded plugin provides the 'sandbox' env runner" in out.stdout
    assert 'store_envs_run = "in-process"' in out.stdout
    assert "sandbox imported: False" in out.stdout


# --- make entry points (in this process) ----------------------------------------------------


def test_stored_envs_run_in_the_sandbox_with_their_domain_allowed_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, puzzle_domain: PuzzlePlugin
) -> None:
    """The make hands the stored code and its metadata to the ``sandbox`` runner a plugin
    registered, after the runner's ``prepare`` (which starts the zygote) and before reading
    the store."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text(), guess_meta("guess", class_name="GuessNumberEnv", reward_range=(0.0, 2.0)))
    runner = RecordingRunnerPlugin(monkeypatch)
    from spade_core.plugins import get_plugins

    get_plugins().register(runner, name="recording-runner")
    read = stored_envs.read_stored
    monkeypatch.setattr(stored_envs, "read_stored", lambda *args: (runner.events.append(("read", None)), read(*args))[1])
    env = stored_envs.make_stored_env("guess-v1", url, config=SpadeConfig())
    assert env is runner
    assert runner.events == [
        ("prepare", None),
        ("read", None),
        (
            "make",
            {
                "source": GUESS.read_text(),
                "max_turns": 6,
                "allowed_modules": ("math", "re"),
                "reward_range": (0.0, 2.0),
                "class_name": "GuessNumberEnv",
                "render_mode": None,
                "sandbox": SandboxSettings(),  # the configuration's [spade.sandbox]
            },
        ),
    ]


def test_import_does_not_prepare_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry: None
) -> None:
    """The registration ``import spade_core`` runs reads the store and never calls the
    runner's ``prepare`` (the sandbox would start its zygote: a test double here), whether
    or not the store exists and wherever its code would run: the first make prepares."""
    monkeypatch.setenv("SPADE_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    plugin = RecordingRunnerPlugin(monkeypatch)
    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(plugin, name="recording-runner")
    reset_plugins(plugins)
    monkeypatch.setattr(seed_index, "_indexed_runners", None)
    events = plugin.events
    read = registry._admitted_gym_ids
    monkeypatch.setattr(registry, "_admitted_gym_ids", lambda *args: (events.append(("store", None)), read(*args))[1])

    def importing() -> list[tuple[str, object]]:
        events.clear()
        registry._register_store(None, registry.Registration())
        return list(events)

    try:
        assert importing() == [("store", None)]  # no store file: nothing to run, and it is not created
        assert not (tmp_path / "store.db").exists()
        with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
            store.add(GUESS.read_text(), guess_meta("guess", class_name="GuessNumberEnv"))
            store.set_status("guess-v1", EnvStatus.admitted)
        assert importing() == [("store", None)]
        assert "spade/guess-v1" in gym.registry
        events.clear()
        registry.register()  # a re-registration is not an import
        assert events == [("store", None)]
        (tmp_path / "spade.toml").write_text('[spade]\nstore_envs_run = "in-process"\n')
        assert importing() == [("store", None)]
        (tmp_path / "spade.toml").unlink()
        reset_plugins(SpadePlugins(load_entry_points=False))  # no runner at all: nothing to prepare
        assert importing() == [("store", None)]
    finally:
        reset_plugins(None)


def test_a_runner_without_prepare_still_runs_store_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, puzzle_domain: PuzzlePlugin
) -> None:
    """``prepare`` is optional: a runner without it is asked only to make."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text(), guess_meta("guess", class_name="GuessNumberEnv"))
    runner = RecordingRunnerPlugin(monkeypatch, prepare=False)
    from spade_core.plugins import get_plugins

    get_plugins().register(runner, name="recording-runner")
    assert stored_envs.make_stored_env("guess-v1", url, config=SpadeConfig()) is runner
    assert [kind for kind, _ in runner.events] == ["make"]
    made = runner.events[0][1]
    assert isinstance(made, dict) and made["source"] == GUESS.read_text()


def test_in_process_execution_of_store_code_is_an_explicit_opt_in(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text(), guess_meta("guess"))
    env = stored_envs.make_stored_env("guess-v1", url, config=SpadeConfig(store_envs_run="in-process"))
    assert isinstance(env, ReferenceEnvAdapter)
    obs, _ = env.reset(seed=5)
    assert "thinking of an integer" in obs
    assert env.max_turns == 6


def test_make_of_an_unknown_stored_env_names_it(tmp_path: Path) -> None:
    from spade_core.errors import EnvNotFound

    url = f"sqlite:///{tmp_path / 'store.db'}"
    EnvStore(url).close()
    with pytest.raises(EnvNotFound, match="'ghost-v1'"):
        stored_envs.make_stored_env("ghost-v1", url, config=SpadeConfig(store_envs_run="in-process"))


# --- register() -----------------------------------------------------------------------------


@pytest.mark.usefixtures("clean_registry")
def test_seed_envs_of_plugins_are_registered_and_made_in_process(tmp_path: Path, puzzle_domain: PuzzlePlugin) -> None:
    result = registry.register(f"sqlite:///{tmp_path / 'none.db'}")
    assert result.seeds == ["spade/seed_guess-v1"]
    assert not (tmp_path / "none.db").exists()
    env = gym.make("spade/seed_guess-v1")
    assert isinstance(env.unwrapped, ReferenceEnvAdapter)
    env.reset(seed=1)
    results = [env.step("\\boxed{1}") for _ in range(4)]
    assert results[-1][2] or results[-1][3]  # max_turns=4 of the seed ends it


@pytest.mark.usefixtures("clean_registry", "puzzle_domain")
def test_register_again_adds_newly_admitted_and_removes_retired_envs(store_url: str) -> None:
    gym.register("Other/Unrelated-v0", entry_point="builtins:object")
    with EnvStore(store_url) as store:
        store.add(GUESS.read_text(), guess_meta("one", status="admitted"))
        store.add(GUESS.read_text(), guess_meta("two"))
        first = registry.register(store)
        assert (first.stored, first.removed) == (1, 0)
        assert "spade/one-v1" in gym.registry and "spade/two-v1" not in gym.registry

        store.set_status("two-v1", EnvStatus.admitted)
        store.set_status("one-v1", EnvStatus.retired)
        second = registry.register(store_url)
        assert (second.stored, second.removed) == (1, 1)
        assert "spade/two-v1" in gym.registry and "spade/one-v1" not in gym.registry
    assert "Other/Unrelated-v0" in gym.registry
    assert "spade/seed_guess-v1" in gym.registry


@pytest.mark.usefixtures("clean_registry", "puzzle_domain")
def test_a_store_env_with_a_seed_id_is_not_registered_over_the_seed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text() + "#", guess_meta("seed_guess", status="admitted"))
    with pytest.warns(RuntimeWarning, match="shadowed by seed environments.*spade/seed_guess-v1"):
        result = registry.register(url)
    assert result.stored == 0
    assert gym.registry["spade/seed_guess-v1"].entry_point == registry.SEED_ENTRY_POINT


@pytest.mark.usefixtures("clean_registry", "puzzle_domain")
def test_a_store_holding_the_seed_itself_shadows_it_without_a_warning(tmp_path: Path) -> None:
    """Self-play admits the seed pool into its store: same id, same code, nothing to report."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text().replace("\n", "\r\n"), guess_meta("seed_guess", status="admitted"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = registry.register(url)
    assert result.problems == [] and result.stored == 0
    assert gym.registry["spade/seed_guess-v1"].entry_point == registry.SEED_ENTRY_POINT


@pytest.mark.usefixtures("clean_registry")
def test_a_failing_plugin_is_a_warning_and_store_envs_still_register(tmp_path: Path) -> None:
    class Broken:
        @hookimpl
        def spade_register_domains(self, register):  # type: ignore[no-untyped-def]
            raise RuntimeError("plugin exploded")

    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(Broken(), name="broken")
    reset_plugins(plugins)
    try:
        url = f"sqlite:///{tmp_path / 'store.db'}"
        with EnvStore(url) as store:
            store.add(GUESS.read_text(), guess_meta("guess", status="admitted"))
        with pytest.warns(RuntimeWarning, match="seed environments were not registered: .*plugin exploded"):
            result = registry.register(url)
        assert result.stored == 1 and "spade/guess-v1" in gym.registry
    finally:
        reset_plugins(None)


@pytest.mark.usefixtures("clean_registry")
def test_registration_inserts_specs_without_gym_register(monkeypatch: pytest.MonkeyPatch) -> None:
    """gym.register checks every existing spec per call (quadratic in a loop)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("gym.register was called")

    monkeypatch.setattr(gym.envs.registration, "register", refuse)
    monkeypatch.setattr(gym, "register", refuse)
    registry._register_stored(
        [f"spade/bulk{i}-v1" for i in range(20_000)], None, "sqlite:///x.db", registry.Registration()
    )
    assert sum(k.startswith("spade/bulk") for k in gym.registry) == 20_000


# --- the cheap spec is a real spec -------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    name=st.from_regex(r"[A-Za-z][A-Za-z0-9_.]{0,30}", fullmatch=True),
    version=st.integers(1, 10**6),
    url=st.sampled_from(["sqlite:///s.db", "postgresql+psycopg://u@127.0.0.1:9/db"]),  # refuses at once, no DNS
)
def test_a_stored_spec_equals_the_spec_gymnasium_would_construct(name: str, version: int, url: str) -> None:
    env_id = f"{name}-v{version}"
    (cheap,) = stored_envs.stored_specs([f"spade/{env_id}"], url)
    full = EnvSpec(
        id=f"spade/{env_id}", entry_point=registry.STORED_ENTRY_POINT, kwargs={"env_id": env_id, "store_url": url}
    )
    fields = [f.name for f in dataclasses.fields(EnvSpec)]
    assert {f: getattr(cheap, f) for f in fields} == {f: getattr(full, f) for f in fields}
    assert (cheap.namespace, cheap.name, cheap.version) == ("spade", name, version)
    assert json.loads(cheap.to_json()) == json.loads(full.to_json())
    for clone in (pickle.loads(pickle.dumps(cheap)), copy.deepcopy(cheap), dataclasses.replace(cheap)):
        assert {f: getattr(clone, f) for f in fields} == {f: getattr(full, f) for f in fields}
    with pytest.raises(AttributeError):
        cheap.no_such_field  # noqa: B018


def test_register_on_import_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(registry, "_register_store", explode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry.register_on_import()
    assert any("registration failed: boom" in str(w.message) for w in caught)


@pytest.mark.usefixtures("clean_registry")
def test_gym_make_of_one_stored_env_does_not_expand_every_spec(tmp_path: Path) -> None:
    """gymnasium.make scans every spec's namespace and name; the others stay unexpanded."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add_many((GUESS.read_text() + f"\n# {i}", guess_meta(f"many{i}", status="admitted")) for i in range(300))
    registry.register(url, seeds=False)
    env = stored_envs.make_stored_env("many7-v1", url, config=SpadeConfig(store_envs_run="in-process"))
    assert env.reset(seed=1)[0]
    made = gym.make("spade/many7-v1", config=SpadeConfig(store_envs_run="in-process"))
    assert made.reset(seed=1)[0]
    expanded = [g for g, s in gym.registry.items() if isinstance(s, registry.StoredEnvSpec) and "kwargs" in s.__dict__]
    assert expanded == ["spade/many7-v1"]


@pytest.mark.usefixtures("clean_registry")
def test_gymnasium_tools_read_stored_specs_like_any_other(tmp_path: Path) -> None:
    """``gym.spec``, ``pprint_registry`` and the unversioned lookup of ``make`` (which scans
    every spec's namespace, name and version) on slot-built specs."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text(), guess_meta("guess", status="admitted"))
        store.add(GUESS.read_text() + "\n# v2", guess_meta("guess"), new_version=True)
        store.set_status("guess-v2", EnvStatus.admitted)
    registry.register(url, seeds=False)
    spec = gym.spec("spade/guess-v2")
    assert (spec.namespace, spec.name, spec.version, spec.kwargs["env_id"]) == ("spade", "guess", 2, "guess-v2")
    listing = gym.pprint_registry(disable_print=True)
    assert "guess-v1" in listing and "guess-v2" in listing
    with pytest.warns(UserWarning, match="Using the latest versioned environment `spade/guess-v2`"):
        env = gym.make("spade/guess", config=SpadeConfig(store_envs_run="in-process"))
    assert env.spec is not None and env.spec.id == "spade/guess-v2"
    env.close()


@pytest.mark.usefixtures("clean_registry")
@pytest.mark.parametrize("enabled", [True, False])
def test_registration_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    import gc

    (gc.enable if enabled else gc.disable)()
    try:
        registry._register_stored(
            [f"spade/gc{i}-v1" for i in range(100)], None, "sqlite:///x.db", registry.Registration()
        )
        assert gc.isenabled() == enabled
    finally:
        gc.enable()


# --- max_episode_steps of store specs -------------------------------------------------------


def _time_limits(env: gym.Env) -> list[int]:
    """``max_episode_steps`` of every TimeLimit in a made environment's wrapper chain."""
    found = []
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            found.append(env._max_episode_steps)
        env = env.env
    return found


@pytest.mark.usefixtures("clean_registry")
def test_a_stored_spec_carries_its_max_turns_and_make_applies_a_time_limit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text(), guess_meta("short", status="admitted", max_turns=3))
        store.add(GUESS.read_text() + "\n# long", guess_meta("long", status="admitted", max_turns=40))
    registry.register(url, seeds=False)
    registered = [s for s in gym.registry.values() if isinstance(s, registry.StoredEnvSpec)]
    assert not any("max_episode_steps" in s.__dict__ for s in registered)  # registration read no document
    assert gym.spec("spade/short-v1").max_episode_steps == 3
    assert gym.spec("spade/long-v1").max_episode_steps == 40
    assert json.loads(gym.spec("spade/long-v1").to_json())["max_episode_steps"] == 40

    in_process = SpadeConfig(store_envs_run="in-process")
    env = gym.make("spade/short-v1", config=in_process)
    assert _time_limits(env) == [3]
    env.reset(seed=0)
    outcomes = [env.step("\\boxed{0}") for _ in range(3)]  # 0 is never the secret in [1, 64]
    assert [o[2] or o[3] for o in outcomes] == [False, False, True]
    assert env.spec is not None and env.spec.max_episode_steps == 3
    env.close()
    assert _time_limits(gym.make("spade/short-v1", config=in_process, max_episode_steps=-1)) == []
    assert _time_limits(gym.make("spade/short-v1", config=in_process, max_episode_steps=2)) == [2]


@pytest.mark.usefixtures("clean_registry")
def test_a_make_reads_the_store_document_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """make_stored_env records the max_turns it read on the spec, so the TimeLimit costs no
    second read."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text(), guess_meta("once", status="admitted", max_turns=5))
    registry.register(url, seeds=False)
    reads: list[str] = []
    real = stored_envs.read_stored
    monkeypatch.setattr(stored_envs, "read_stored", lambda u, env_id: reads.append(env_id) or real(u, env_id))
    env = gym.make("spade/once-v1", config=SpadeConfig(store_envs_run="in-process"))
    assert _time_limits(env) == [5]
    assert reads == ["once-v1"]


@pytest.mark.usefixtures("clean_registry")
def test_a_spec_of_an_unreadable_store_has_no_step_limit_and_its_make_says_why(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}"
    with EnvStore(url) as store:
        store.add(GUESS.read_text(), guess_meta("lost", status="admitted"))
    registry.register(url, seeds=False)
    db.unlink()
    spec = gym.spec("spade/lost-v1")
    assert spec.max_episode_steps is None
    with pytest.raises(StoreError, match="store file does not exist"):
        gym.make(spec, config=SpadeConfig(store_envs_run="in-process"))


def test_a_fresh_interpreter_sees_max_turns_on_the_spec_of_a_stored_env(tmp_path: Path) -> None:
    home = home_with_store(tmp_path, in_process=True)
    out = run_python(
        """
        import gymnasium as gym
        import spade_core
        spec = gym.spec("spade/guess-v1")
        env = gym.make("spade/guess-v1")
        limits = []
        inner = env
        while isinstance(inner, gym.Wrapper):
            if isinstance(inner, gym.wrappers.TimeLimit):
                limits.append(inner._max_episode_steps)
            inner = inner.env
        print(spec.max_episode_steps, limits)
        """,
        home,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6", "[6]"]  # guess_meta's max_turns
