"""Env runners: how the core reaches the code that runs untrusted environments (the sandbox)
without importing it, through the ``spade_register_env_runners`` hook."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.errors import PluginError
from spade_core.hookspecs import hookimpl
from spade_core.plugins import SpadePlugins
from spade_core.runners import IN_PROCESS, SANDBOX, EnvRunner, by_name, resolve

from .test_registry import home_with_store, run_python


class RunnerPlugin:
    def __init__(self, *runners: object) -> None:
        self.runners = runners

    @hookimpl
    def spade_register_env_runners(self, register):  # type: ignore[no-untyped-def]
        for runner in self.runners:
            register(runner)


def test_the_installed_sandbox_registers_the_default_runner_by_name_only() -> None:
    """spade-sandbox provides the ``sandbox`` runner as strings; registering imports
    nothing of the sandbox beyond its plugin module."""
    runners = SpadePlugins().env_runners()
    assert runners[SANDBOX] == EnvRunner(
        SANDBOX, make="spade_sandbox.opener:open_env", prepare="spade_sandbox.prestart:prepare"
    )
    assert resolve(runners[SANDBOX].make).__name__ == "open_env"


def test_a_runner_name_registered_twice_names_both_plugins() -> None:
    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(RunnerPlugin(EnvRunner("jail", make="a.b:c")), name="first")
    plugins.register(RunnerPlugin(EnvRunner("jail", make="d.e:f")), name="second")
    with pytest.raises(PluginError, match=r"env runner 'jail' registered twice \(by 'first' and 'second'\)"):
        plugins.env_runners()


def test_register_takes_only_env_runners() -> None:
    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(RunnerPlugin(("jail", "a.b:c")), name="wrong")
    with pytest.raises(PluginError, match="plugin 'wrong': register\\(\\) expects an EnvRunner, got tuple"):
        plugins.env_runners()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "", "make": "a:b"}, "must be non-empty"),
        ({"name": IN_PROCESS, "make": "a:b"}, "not 'in-process'"),
        ({"name": "jail", "make": "a.b"}, "make must be 'module:attribute', got 'a.b'"),
        ({"name": "jail", "make": "a:b", "prepare": "a:"}, "prepare must be 'module:attribute'"),
    ],
)
def test_a_malformed_runner_is_refused_naming_the_field(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EnvRunner(**fields)


refs = st.from_regex(r"[a-z_][a-z0-9_]{0,8}(\.[a-z_][a-z0-9_]{0,8}){0,2}:[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


@given(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(lambda n: n != IN_PROCESS), refs, st.none() | refs)
def test_a_runner_survives_the_seed_index_round_trip(name: str, make: str, prepare: str | None) -> None:
    runner = EnvRunner(name, make=make, prepare=prepare)
    assert EnvRunner.from_json(json.loads(json.dumps(runner.to_json()))) == runner


@pytest.mark.parametrize(
    "record",
    [
        None,
        [],
        {"name": "x", "make": "a:b"},
        {"name": 1, "make": "a:b", "prepare": None},
        {"name": "x", "make": "a:b", "prepare": 3},
    ],
)
def test_a_damaged_runner_record_is_refused(record: object) -> None:
    with pytest.raises(ValueError, match="not an env runner record"):
        EnvRunner.from_json(record)


def test_by_name_refuses_a_duplicate() -> None:
    with pytest.raises(ValueError, match="'jail' registered twice"):
        by_name([EnvRunner("jail", make="a:b"), EnvRunner("jail", make="c:d")])


def test_resolve_imports_the_module_and_refuses_what_is_not_callable(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("spade_test_resolve")
    module.Maker = type("Maker", (), {"build": staticmethod(lambda: 1)})  # type: ignore[attr-defined]
    module.value = 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "spade_test_resolve", module)
    assert resolve("spade_test_resolve:Maker.build")() == 1
    with pytest.raises(TypeError, match="spade_test_resolve:value is not callable"):
        resolve("spade_test_resolve:value")


def test_a_fresh_import_and_make_find_the_sandbox_runner_in_the_seed_index(tmp_path: Path) -> None:
    """The second interpreter reads the runner from the seed index: it makes a sandboxed
    store environment without loading the plugins (no pluggy), as before the runner hook."""
    home = home_with_store(tmp_path, in_process=False)
    code = """
        import sys, gymnasium as gym
        env = gym.make("spade_core:spade/guess-v1")
        print(type(env.unwrapped).__name__, "pluggy" in sys.modules)
        env.close()
        """
    first = run_python(code, home)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["SandboxedEnv", "True"]  # the first import loads the plugins
    assert (home / "cache" / "seed-index.json").exists()
    second = run_python(code, home)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["SandboxedEnv", "False"]
