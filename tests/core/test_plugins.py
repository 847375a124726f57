"""Plugins: which load (SPADE_PLUGINS / config), how a third-party plugin is found and
registered, and what a broken plugin reports. Each test builds its own throwaway plugin."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from spade_core.app.cli import build_app
from spade_core.errors import PluginError
from spade_core.plugins import DEFAULT_PLUGINS, SpadePlugins, selected_plugins
from typer.testing import CliRunner

PLUGIN_SOURCE = '''
from pathlib import Path

import typer

from spade_core.domains import Domain, SeedEnv
from spade_core.hookspecs import hookimpl

HERE = Path(__file__).parent


@hookimpl
def spade_register_domains(register):
    register(
        Domain(
            name="{domain}",
            description="a throwaway test domain",
            skills=("counting",),
            prompt_spec="count things",
            seed_envs=(SeedEnv(name="{domain}_seed", skill="counting", path=HERE / "seed_env.py"),),
        )
    )


@hookimpl
def spade_register_llm_backends(register):
    register("{domain}-echo", lambda **opts: ("echo", opts))


@hookimpl
def spade_register_commands(cli):
    @cli.command("{domain}-hello")
    def hello(name: str = "world") -> None:
        typer.echo(f"hello {{name}} from {domain}")
'''

SEED_ENV = '''
class CounterEnv:
    def reset(self, seed=None):
        self.n = 0
        return "count to 2", {}

    def step(self, action):
        self.n += 1
        return str(self.n), float(self.n >= 2), self.n >= 2, False, {}

    def solution(self):
        return ["\\\\boxed{up}", "\\\\boxed{up}"]
'''


def make_plugin_package(root: Path, package: str, domain: str) -> Path:
    """A plugin package (module + a seed env file) under ``root``."""
    pkg = root / package
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(PLUGIN_SOURCE.format(domain=domain)), encoding="utf-8")
    (pkg / "seed_env.py").write_text(textwrap.dedent(SEED_ENV), encoding="utf-8")
    return pkg


def make_distribution(root: Path, dist: str, version: str, package: str, ep_name: str) -> None:
    """A minimal installed distribution: the package plus a ``.dist-info`` that
    importlib.metadata discovers on ``sys.path``, with an entry point in group ``spade``."""
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[spade]\n{ep_name} = {package}\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")


@pytest.fixture
def on_sys_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = set(sys.modules)
    yield site
    for name in set(sys.modules) - before:
        if name.startswith("tmp_spade_plugin"):
            del sys.modules[name]


def test_builtin_plugins_always_load_and_register_the_core_commands() -> None:
    plugins = SpadePlugins(load_entry_points=False)
    assert [i.name for i in plugins.infos] == list(DEFAULT_PLUGINS)
    assert plugins.infos[0].builtin and plugins.infos[0].distribution == "spade-core"
    assert "spade_register_commands" in plugins.infos[0].hooks
    app_help = CliRunner().invoke(build_app(plugins), ["--help"]).output
    for command in ("list", "show", "play", "import", "export", "plugins"):
        assert command in app_help


@pytest.mark.parametrize(
    "raw, expected", [(None, None), ("", set()), ("games, tooluse ,", {"games", "tooluse"})]
)
def test_spade_plugins_selects_by_entry_point_name(
    raw: str | None, expected: set[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if raw is None:
        monkeypatch.delenv("SPADE_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("SPADE_PLUGINS", raw)
    assert selected_plugins() == expected


def test_the_config_list_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_PLUGINS", "games")
    assert selected_plugins(["tooluse"]) == {"tooluse"}


def test_an_empty_selection_loads_only_the_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_PLUGINS", "")
    assert [i.name for i in SpadePlugins().infos] == list(DEFAULT_PLUGINS)


def test_a_plugin_module_built_in_tmp_registers_domains_backends_and_commands(on_sys_path: Path) -> None:
    make_plugin_package(on_sys_path, "tmp_spade_plugin_a", "abacus")
    import tmp_spade_plugin_a  # type: ignore[import-not-found]

    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(tmp_spade_plugin_a, name="abacus-plugin")

    domain = plugins.domain("abacus")
    assert domain.skills == ("counting",)
    assert domain.seed("abacus_seed").source().startswith("\nclass CounterEnv")
    assert plugins.create("llm_backends", "abacus-echo", temperature=0) == ("echo", {"temperature": 0})

    result = CliRunner().invoke(build_app(plugins), ["abacus-hello", "--name", "Ada"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "hello Ada from abacus"


def test_a_real_distribution_with_an_entry_point_is_discovered(
    on_sys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_plugin_package(on_sys_path, "tmp_spade_plugin_b", "tally")
    make_distribution(on_sys_path, "spade-tally", "2.3.4", "tmp_spade_plugin_b", "tally")
    monkeypatch.setenv("SPADE_PLUGINS", "tally")

    plugins = SpadePlugins()
    info = {i.name: i for i in plugins.infos}["tally"]
    assert (info.distribution, info.version, info.builtin) == ("spade-tally", "2.3.4", False)
    assert info.module == "tmp_spade_plugin_b"
    assert set(info.hooks) >= {"spade_register_domains", "spade_register_commands"}
    assert list(plugins.domains()) == ["tally"]
    assert info.domains == ["tally"], "the domain is traced back to its plugin"

    # `spade plugins --json` shows the same facts
    result = CliRunner().invoke(build_app(plugins), ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert rows["tally"]["distribution"] == "spade-tally"
    assert rows["tally"]["version"] == "2.3.4"
    assert rows["tally"]["domains"] == ["tally"]
    assert rows["spade_core.app.builtin"]["builtin"] is True


def test_a_plugin_that_fails_to_import_is_named(on_sys_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = on_sys_path / "tmp_spade_plugin_c"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('missing dependency foo')\n", encoding="utf-8")
    make_distribution(on_sys_path, "spade-broken", "0.1", "tmp_spade_plugin_c", "broken")
    monkeypatch.setenv("SPADE_PLUGINS", "broken")
    with pytest.raises(PluginError, match=r"plugin 'broken' \(tmp_spade_plugin_c\) failed to import: missing dependency foo"):
        SpadePlugins()


def test_selecting_a_plugin_that_is_not_installed_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_PLUGINS", "gamez")
    with pytest.raises(PluginError, match="not installed: gamez .*installed: "):
        SpadePlugins()


def test_two_plugins_registering_one_domain_are_both_named(on_sys_path: Path) -> None:
    make_plugin_package(on_sys_path, "tmp_spade_plugin_d1", "clash")
    make_plugin_package(on_sys_path, "tmp_spade_plugin_d2", "clash")
    import tmp_spade_plugin_d1  # type: ignore[import-not-found]
    import tmp_spade_plugin_d2  # type: ignore[import-not-found]

    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(tmp_spade_plugin_d1, name="first")
    plugins.register(tmp_spade_plugin_d2, name="second")
    with pytest.raises(PluginError, match="domain 'clash' registered twice .*'first'.*'second'"):
        plugins.domains()


def test_registering_something_that_is_not_a_domain_is_an_error() -> None:
    from spade_core.hookspecs import hookimpl

    class Sloppy:
        @hookimpl
        def spade_register_domains(self, register):  # type: ignore[no-untyped-def]
            register({"name": "dict-domain"})

    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(Sloppy(), name="sloppy")
    with pytest.raises(PluginError, match="plugin 'sloppy': register\\(\\) expects a Domain, got dict"):
        plugins.domains()


def test_unknown_factories_list_what_is_known() -> None:
    plugins = SpadePlugins(load_entry_points=False)
    with pytest.raises(PluginError, match="unknown llm backend 'gpt-9' \\(known: none installed\\)"):
        plugins.create("llm_backends", "gpt-9")
    with pytest.raises(PluginError, match="unknown domain 'chess'"):
        plugins.domain("chess")


def test_plugin_options_are_checked_before_the_factory_runs_and_the_plugin_is_named() -> None:
    from pydantic import BaseModel, ConfigDict
    from spade_core.errors import ConfigError
    from spade_core.hookspecs import hookimpl

    built: list[dict[str, object]] = []

    class EchoOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        temperature: float = 1.0

    def shout(volume: int = 1, pitch: str = "low") -> tuple[str, int, str]:
        return ("shout", volume, pitch)

    class Options:
        @hookimpl
        def spade_register_llm_backends(self, register):  # type: ignore[no-untyped-def]
            register("typed", lambda model=None, **opts: built.append(opts) or "typed", EchoOptions)
            register("signed", lambda **opts: built.append(opts) or shout(**opts), shout)
            register("closed", lambda model=None, size=1: built.append({"size": size}) or "closed")
            register("open", lambda **opts: built.append(opts) or "open")  # no options declared: unchecked

    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(Options(), name="opts-plugin")
    assert plugins.create("llm_backends", "typed", model="m", temperature=0.5) == "typed"
    with pytest.raises(ConfigError, match=r"llm backend 'typed' \(plugin 'opts-plugin'\): invalid options\n"
                                          r"  temprature: Extra inputs are not permitted"):
        plugins.create("llm_backends", "typed", temprature=0.5)
    with pytest.raises(ConfigError, match="temperature: Input should be a valid number"):
        plugins.create("llm_backends", "typed", temperature="hot")
    with pytest.raises(ConfigError, match=r"llm backend 'signed' \(plugin 'opts-plugin'\) has no option 'colour'; "
                                          r"it takes: pitch, volume"):
        plugins.create("llm_backends", "signed", colour="red")
    assert plugins.create("llm_backends", "signed", volume=3) == ("shout", 3, "low")
    with pytest.raises(ConfigError, match="has no option 'sise'; it takes: model, size"):
        plugins.create("llm_backends", "closed", sise=2)
    assert plugins.create("llm_backends", "open", anything=1) == "open"
    assert built == [{"temperature": 0.5}, {"volume": 3}, {"anything": 1}]  # nothing refused was built


def test_the_built_in_plugins_options_are_checked() -> None:
    from spade_core.errors import ConfigError
    from spade_core.plugins import get_plugins

    plugins = get_plugins()
    with pytest.raises(ConfigError, match=r"llm backend 'openai' \(plugin '\w+'\) has no option 'temprature'.*base_url"):
        plugins.check_options("llm_backends", "openai", {"model": "m", "temprature": 1})
    with pytest.raises(ConfigError, match=r"corpus 'pydocs' .* has no option 'words'; it takes: .*chunk_words"):
        plugins.check_options("corpora", "pydocs", {"words": 10})
    with pytest.raises(ConfigError, match=r"sandbox backend 'native' .* has no option 'cgroup'"):
        plugins.check_options("sandbox_backends", "native", {"cgroup": False})
    plugins.check_options("llm_backends", "transformers", {"model": None, "device": "cpu"})
