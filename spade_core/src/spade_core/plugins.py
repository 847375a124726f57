"""Plugin discovery and the registries filled through the hooks.

Which plugins load:

* SPADE's built-in plugins (:data:`DEFAULT_PLUGINS`) always load — core features go
  through the same hooks as everyone else's;
* installed plugins are the entry points of group ``spade``; the environment variable
  ``SPADE_PLUGINS`` (comma-separated entry-point names, empty for none) or the config key
  ``plugins`` restricts which of them load. Unset means all installed plugins.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from typing import TYPE_CHECKING, Any

import pluggy

from . import hookspecs
from .domains import DesignGuide, Domain
from .errors import ConfigError, PluginError, field_errors
from .names import ActionFormat
from .plugin_checks import PluginProblem, checked_seeds, refuse_shared_names
from .runners import EnvRunner, resolve

if TYPE_CHECKING:
    from .config import SpadeConfig

ENTRY_POINT_GROUP = "spade"
DEFAULT_PLUGINS: tuple[str, ...] = ("spade_core.app.builtin",)
ENV_VAR = "SPADE_PLUGINS"


@dataclass
class PluginInfo:
    """What ``spade plugins`` shows about one loaded plugin."""

    name: str
    module: str
    distribution: str | None
    version: str | None
    builtin: bool
    hooks: list[str] = field(default_factory=list)
    #: Names of the domains this plugin registered (filled when domains are first listed).
    domains: list[str] = field(default_factory=list)


def _core_version() -> str | None:
    try:
        return importlib_metadata.version("spade-core")
    except importlib_metadata.PackageNotFoundError:
        return None


def selected_plugins(explicit: Iterable[str] | None = None) -> set[str] | None:
    """Entry-point names to load, or ``None`` for all. ``explicit`` (config) wins over env."""
    if explicit is not None:
        return {p.strip() for p in explicit if p.strip()}
    raw = os.environ.get(ENV_VAR)
    if raw is None:
        return None
    return {p.strip() for p in raw.split(",") if p.strip()}


class SpadePlugins:
    """A loaded plugin manager plus the registries its hooks fill (built lazily, once)."""

    def __init__(self, only: Iterable[str] | None = None, *, load_entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.pm.add_hookspecs(hookspecs)
        self._infos: list[PluginInfo] = []
        # Distribution names and versions come from each distribution's METADATA file
        # (an e-mail header parse each): read when ``infos`` is first asked for, not at
        # ``import spade_core``. Maps plugin name -> its distribution (None: spade-core).
        self._undescribed: dict[str, Any] = {}
        for modname in DEFAULT_PLUGINS:
            mod = importlib.import_module(modname)
            self.pm.register(mod, name=modname)
            self._infos.append(PluginInfo(modname, modname, "spade-core", None, True))
            self._undescribed[modname] = None
        if load_entry_points:
            self._load_entry_points(selected_plugins(only))
        self.pm.check_pending()
        for info in self._infos:
            self._fill_hooks(info)
        self._lock = threading.Lock()
        self._domains: dict[str, Domain] | None = None
        self._problems: list[PluginProblem] = []
        self._runners: dict[str, EnvRunner] | None = None
        self._sections: dict[str, tuple[str, Any]] | None = None
        self._factories: dict[str, dict[str, Any]] = {}

    def _fill_hooks(self, info: PluginInfo) -> None:
        plugin = self.pm.get_plugin(info.name)
        info.hooks = sorted(h.name for h in (self.pm.get_hookcallers(plugin) or []))

    def _load_entry_points(self, only: set[str] | None) -> None:
        eps = list(importlib_metadata.entry_points(group=ENTRY_POINT_GROUP))
        if only is not None:
            # A misspelt selection would otherwise load nothing, silently.
            unknown = sorted(only - {ep.name for ep in eps})
            if unknown:
                installed = ", ".join(sorted({ep.name for ep in eps})) or "none"
                raise PluginError(
                    f"{ENV_VAR} / config 'plugins' names plugin(s) that are not installed: "
                    f"{', '.join(unknown)} (installed: {installed})"
                )
        for ep in eps:
            if only is not None and ep.name not in only:
                continue
            if self.pm.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:
                raise PluginError(f"plugin {ep.name!r} ({ep.value}) failed to import: {exc}") from exc
            self.pm.register(plugin, name=ep.name)
            self._infos.append(PluginInfo(ep.name, ep.value, None, None, False))
            dist = getattr(ep, "dist", None)
            if dist is not None:
                self._undescribed[ep.name] = dist

    @property
    def infos(self) -> list[PluginInfo]:
        """What ``spade plugins`` shows: every loaded plugin, in load order."""
        with self._lock:
            for info in self._infos:
                if info.name in self._undescribed:
                    dist = self._undescribed.pop(info.name)
                    if dist is None:
                        info.version = _core_version()
                    else:
                        info.distribution, info.version = dist.metadata["Name"], dist.version
            return self._infos

    def module_names(self) -> list[str]:
        """The module (or object name) each loaded plugin came from, in load order."""
        return [info.module.partition(":")[0] for info in self._infos]

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register a plugin object directly (tests, embedding applications)."""
        registered = self.pm.register(plugin, name=name)
        if registered is None:
            raise PluginError(f"plugin {name!r} is blocked and was not registered")
        self.pm.check_pending()
        info = PluginInfo(registered, getattr(plugin, "__name__", type(plugin).__name__), None, None, False)
        self._fill_hooks(info)
        self._infos.append(info)
        self._domains = None
        self._runners = None
        self._factories.clear()

    # --- registries -----------------------------------------------------------------

    def domains(self) -> dict[str, Domain]:
        """Every registered domain, by name, each with the seeds that passed the checks of
        :meth:`problems` (a domain whose own fields are wrong is left out with its seeds)."""
        with self._lock:
            if self._domains is None:
                self._domains, self._problems = self._load_domains()
            return self._domains

    def problems(self) -> list[PluginProblem]:
        """What the plugins registered wrongly, one :class:`PluginProblem` per bad seed or
        domain (a seed's problem lists every mistake in it), found when the domains are
        first listed: a ``spade_register_domains`` that raised, a domain's own fields
        (:func:`~spade_core.domains.domain_problems`), each seed's metadata, file, class and
        skill (:func:`~spade_core.domains.seed_problems`), and a seed name that two seeds
        take, in one domain or two (neither is registered: which one a name means must not
        depend on load order). The rest keeps working: only what is named here is left out."""
        self.domains()
        with self._lock:
            return list(self._problems)

    def _load_domains(self) -> tuple[dict[str, Domain], list[PluginProblem]]:
        found: dict[str, Domain] = {}
        owner: dict[str, str] = {}
        problems: list[PluginProblem] = []
        # Each implementation is called on its own so that every domain is traced back to
        # the plugin that registered it (``spade plugins`` shows this).
        for impl in self.pm.hook.spade_register_domains.get_hookimpls():

            def register(domain: Domain, _plugin: str = impl.plugin_name) -> None:
                if not isinstance(domain, Domain):
                    raise PluginError(f"plugin {_plugin!r}: register() expects a Domain, got {type(domain).__name__}")
                if domain.name in found:
                    raise PluginError(
                        f"domain {domain.name!r} registered twice (by {owner[domain.name]!r} and {_plugin!r})"
                    )
                found[domain.name] = domain
                owner[domain.name] = _plugin

            try:
                impl.function(register=register)
            except PluginError:
                raise
            except Exception as exc:  # the plugin's own code: named, and the others go on
                problems.append(PluginProblem(
                    impl.plugin_name, f"spade_register_domains raised {type(exc).__name__}: {exc}"))
        for info in self._infos:
            info.domains = sorted(d for d, p in owner.items() if p == info.name)
        kept = {name: checked_seeds(owner[name], domain, problems) for name, domain in found.items()}
        refuse_shared_names(owner, kept, problems)
        domains = {
            name: dataclasses.replace(domain, seed_envs=tuple(kept[name]), action_format=ActionFormat(domain.action_format))
            for name, domain in found.items()
            if not any(p.domain == name and p.seed is None for p in problems)
        }
        return domains, problems

    def domain(self, name: str) -> Domain:
        try:
            return self.domains()[name]
        except KeyError:
            known = ", ".join(sorted(self.domains())) or "none installed"
            raise PluginError(f"unknown domain {name!r} (known: {known})") from None

    def design_guides(self) -> dict[str, DesignGuide]:
        """How plugins shape the designer of each domain (``spade_register_design_guides``),
        by domain name."""
        with self._lock:
            if "design_guides" not in self._factories:
                found: dict[str, tuple[DesignGuide, str]] = {}
                for impl in self.pm.hook.spade_register_design_guides.get_hookimpls():

                    def register(guide: DesignGuide, _plugin: str = impl.plugin_name) -> None:
                        if not isinstance(guide, DesignGuide):
                            raise PluginError(f"plugin {_plugin!r}: register() expects a DesignGuide, "
                                              f"got {type(guide).__name__}")
                        if guide.scaffold is not None and not guide.scaffold_task:
                            raise PluginError(f"plugin {_plugin!r}: the design guide of domain {guide.domain!r} has a "
                                              "scaffold without its scaffold_task (what the model writes after it)")
                        if guide.domain in found:
                            raise PluginError(f"domain {guide.domain!r} given two design guides "
                                              f"(by {found[guide.domain][1]!r} and {_plugin!r})")
                        found[guide.domain] = (guide, _plugin)

                    impl.function(register=register)
                self._factories["design_guides"] = {name: guide for name, (guide, _) in found.items()}
            return dict(self._factories["design_guides"])

    def env_runners(self) -> dict[str, EnvRunner]:
        """The runners of untrusted environment code, by name (``store_envs_run`` picks one).
        A name registered twice is a :class:`~spade_core.errors.PluginError` naming both
        plugins: which one would run untrusted code must never depend on load order."""
        with self._lock:
            if self._runners is None:
                found: dict[str, EnvRunner] = {}
                owner: dict[str, str] = {}
                for impl in self.pm.hook.spade_register_env_runners.get_hookimpls():

                    def register(runner: EnvRunner, _plugin: str = impl.plugin_name) -> None:
                        if not isinstance(runner, EnvRunner):
                            raise PluginError(
                                f"plugin {_plugin!r}: register() expects an EnvRunner, got {type(runner).__name__}"
                            )
                        if runner.name in found:
                            raise PluginError(
                                f"env runner {runner.name!r} registered twice "
                                f"(by {owner[runner.name]!r} and {_plugin!r})"
                            )
                        found[runner.name] = runner
                        owner[runner.name] = _plugin

                    impl.function(register=register)
                self._runners = found
            return self._runners

    def _named(self, kind: str) -> dict[str, Callable[..., Any]]:
        return {name: r.factory for name, r in self._registered(kind).items()}

    def _registered(self, kind: str) -> dict[str, _Registered]:
        with self._lock:
            if kind not in self._factories:
                found: dict[str, _Registered] = {}
                for impl in getattr(self.pm.hook, f"spade_register_{kind}").get_hookimpls():

                    def register(name: str, factory: Callable[..., Any], options: Any = None,
                                 _plugin: str = impl.plugin_name) -> None:
                        if name in found:
                            raise PluginError(f"{_label(kind)} {name!r} registered twice "
                                              f"(by {found[name].plugin!r} and {_plugin!r})")
                        found[name] = _Registered(factory, options, _plugin)

                    impl.function(register=register)
                self._factories[kind] = found
            return self._factories[kind]

    def llm_backends(self) -> dict[str, Callable[..., Any]]:
        return self._named("llm_backends")

    def sandbox_backends(self) -> dict[str, Callable[..., Any]]:
        return self._named("sandbox_backends")

    def corpora(self) -> dict[str, Callable[..., Any]]:
        return self._named("corpora")

    def memories(self) -> dict[str, Callable[..., Any]]:
        return self._named("memories")

    def eval_suites(self) -> dict[str, Any]:
        """Every registered :class:`~spade_core.evaluation.EpisodeSuite`, by name."""
        with self._lock:
            if "eval_suites" not in self._factories:
                found: dict[str, Any] = {}

                def register(suite: Any) -> None:
                    if suite.name in found:
                        raise PluginError(f"eval suite {suite.name!r} registered twice")
                    found[suite.name] = suite

                self.pm.hook.spade_register_eval_suites(register=register)
                self._factories["eval_suites"] = found
            return dict(self._factories["eval_suites"])

    def config_sections(self) -> dict[str, tuple[str, Any]]:
        """``table -> (plugin, model)`` for every table of ``spade.toml`` a plugin owns
        (``spade_register_config_sections``)."""
        with self._lock:
            if self._sections is None:
                found: dict[str, tuple[str, Any]] = {}
                for impl in self.pm.hook.spade_register_config_sections.get_hookimpls():

                    def register(table: str, model: Any, _plugin: str = impl.plugin_name) -> None:
                        if not isinstance(table, str) or not table or table == "spade":
                            raise PluginError(f"plugin {_plugin!r}: cannot own the configuration table {table!r}")
                        if table in found:
                            raise PluginError(
                                f"configuration table [{table}] registered twice (by {found[table][0]!r} and {_plugin!r})"
                            )
                        found[table] = (_plugin, model)

                    impl.function(register=register)
                self._sections = found
            return self._sections

    def check_config(self, config: SpadeConfig) -> SpadeConfig:
        """Validate every table of ``config`` with the model of the plugin that owns it, once,
        and keep the results (``config.settings(table)``). All problems are reported in one
        :class:`~spade_core.errors.ConfigError`, each line naming the table, the key and the
        plugin; a table that no loaded plugin owns is one of them (a misspelt ``[desinger]``
        would otherwise be ignored). Returns ``config``."""
        from pydantic import ValidationError

        owners = self.config_sections()
        problems: list[str] = []
        typed: dict[str, Any] = {}
        for table, raw in config.sections.items():
            if table not in owners:
                known = ", ".join(f"[{t}]" for t in ["spade", *sorted(owners)])
                problems.append(f"  [{table}]: no installed plugin reads this table (known: {known})")
                continue
            plugin, model = owners[table]
            if isinstance(model, str):
                model = resolve(model)
            try:
                typed[table] = model.model_validate(raw)
            except ValidationError as exc:
                problems += field_errors(exc, prefix=f"  {table}.", root="(table)", suffix=f" (plugin {plugin!r})")
            except (ValueError, TypeError, ConfigError) as exc:
                problems.append(f"  [{table}]: {exc} (plugin {plugin!r})")
        if problems:
            raise ConfigError("\n".join([f"invalid configuration in {config.origin}:", *problems]))
        config.keep_settings(typed)
        return config

    def create(self, kind: str, name: str, **options: Any) -> Any:
        """Instantiate a registered ``kind`` ("llm_backends", "corpora", ...) by name, after
        :meth:`check_options` has accepted ``options``."""
        self.check_options(kind, name, options)
        return self._registered(kind)[name].factory(**options)

    def check_options(self, kind: str, name: str, options: dict[str, Any]) -> None:
        """Refuse options the registered ``name`` of ``kind`` does not take, before anything
        is built: a :class:`~spade_core.errors.ConfigError` naming the plugin, the option and
        the options it does take (a pydantic model given as ``options`` at registration also
        checks the values). The factory's own named parameters are always accepted; what
        goes to its ``**options`` is checked against the registered ``options`` (a class or
        callable, or ``"module:attr"`` imported only here, whose signature lists them; or a
        pydantic model). A factory that takes ``**options`` and registered no ``options``
        cannot be checked. An unknown ``name`` is a :class:`~spade_core.errors.PluginError`."""
        registered = self._registered(kind)
        if name not in registered:
            known = ", ".join(sorted(registered)) or "none installed"
            raise PluginError(f"unknown {_label(kind)} {name!r} (known: {known})")
        r = registered[name]
        who = f"{_label(kind)} {name!r} (plugin {r.plugin!r})"
        own, open_ended = _accepted(r.factory)
        rest = {k: v for k, v in options.items() if k not in own}
        if not rest:
            return
        if not open_ended:
            raise ConfigError(_unknown(who, rest, own))
        spec = r.options
        if spec is None:
            return
        if isinstance(spec, str):
            try:
                spec = resolve(spec)
            except (ImportError, AttributeError):
                return  # its module needs what is not installed: building it will say so
        from pydantic import BaseModel, ValidationError

        if isinstance(spec, type) and issubclass(spec, BaseModel):
            try:
                spec.model_validate(rest)
            except ValidationError as exc:
                lines = [f"{who}: invalid options", *field_errors(exc, prefix="  ", root="")]
                raise ConfigError("\n".join(lines)) from None
            return
        theirs, theirs_open = _accepted(spec)
        if not theirs_open and (unknown := {k: v for k, v in rest.items() if k not in theirs}):
            raise ConfigError(_unknown(who, unknown, own | theirs))


@dataclass(frozen=True)
class _Registered:
    """One named factory: what builds it, what options it takes (see
    :meth:`SpadePlugins.check_options`) and which plugin registered it."""

    factory: Callable[..., Any]
    options: Any
    plugin: str


def _label(kind: str) -> str:
    """``"llm_backends"`` -> ``"llm backend"``; ``"corpora"`` -> ``"corpus"``."""
    return {"corpora": "corpus", "memories": "memory"}.get(kind, kind.rstrip("s")).replace("_", " ")


def _accepted(target: Callable[..., Any]) -> tuple[set[str], bool]:
    """The keyword names ``target`` takes, and whether it also takes ``**kwargs``."""
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return set(), True  # no signature to read: nothing can be refused
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return named - {"self"}, any(p.kind is p.VAR_KEYWORD for p in params)


def _unknown(who: str, unknown: dict[str, Any], known: set[str]) -> str:
    names = ", ".join(repr(k) for k in sorted(unknown))
    return (f"{who} has no option {names}; it takes: {', '.join(sorted(known)) or 'none'}")


_plugins: SpadePlugins | None = None
_plugins_lock = threading.Lock()


def get_plugins() -> SpadePlugins:
    """The process-wide plugin set (loaded on first use)."""
    global _plugins
    with _plugins_lock:
        if _plugins is None:
            _plugins = SpadePlugins()
        return _plugins


def reset_plugins(plugins: SpadePlugins | None = None) -> None:
    """Replace the process-wide plugin set (tests)."""
    global _plugins
    with _plugins_lock:
        _plugins = plugins
