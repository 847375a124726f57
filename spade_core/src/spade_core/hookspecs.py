"""The plugin contract of SPADE: every hook a plugin may implement.

Plugins are modules or packages listed under the ``spade`` entry-point group (selected by
``SPADE_PLUGINS`` or the config's ``plugins``); SPADE's own features are registered through
these same hooks (``spade_core.app.builtin`` and each package's ``plugin`` module). Each hook's
docstring says when it is called, how often, whether the first answer wins
(*firstresult*) or every plugin's answer counts, and what a duplicate does.

Rules common to the ``spade_register_*`` hooks: a registry is filled the first time it is
asked for on a plugin set (:class:`spade_core.plugins.SpadePlugins`) and kept, so each
implementation runs at most once per registry and plugin set (registering another plugin
with ``SpadePlugins.register`` empties the registries: they are filled again on the next
question). They give back nothing: the plugin calls ``register`` once per thing it
provides. A name registered twice, by one plugin or two, is a
:class:`~spade_core.errors.PluginError` when the registry is filled: no registration
silently replaces another. Implementations are called in pluggy's order (the last
registered plugin first), which therefore never decides a winner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import typer

    from .admission import AdmissionValidator
    from .config import SpadeConfig
    from .domains import DesignGuide, Domain
    from .runners import EnvRunner
    from .shaping import AgentRewardContext, DesignerRewardContext

hookspec = pluggy.HookspecMarker("spade")
hookimpl = pluggy.HookimplMarker("spade")


@hookspec
def spade_register_domains(register: Callable[[Domain], None]) -> None:
    """Register domains: ``register(Domain(...))`` once per domain the plugin provides.

    Called once per plugin set, by the first ``SpadePlugins.domains()`` (``import spade_core``
    when the seed index is not valid, the CLI, the designer, validation). A domain name
    registered twice is a ``PluginError`` naming both plugins; anything but a ``Domain`` is
    a ``PluginError`` naming the plugin. Then every domain and seed is checked
    (``SpadePlugins.problems()``: a seed's fields, file, class and skill, a seed name two
    seeds take, a domain's own fields; an implementation that raises): what is wrong is left
    out and reported in one line, the rest registers. ``import spade_core`` registers each
    domain's seed environments with Gymnasium (a refused seed's id raises its problem) and
    keeps them in the seed index."""


@hookspec
def spade_register_design_guides(register: Callable[[DesignGuide], None]) -> None:
    """Shape the designer of a domain: ``register(DesignGuide(domain, examples=...,
    scaffold=..., scaffold_task=...))``, its own example environments shown in the full
    design prompt and its own code scaffold prefilled in the compact one
    (``spade_core.domains.DesignGuide``; the domain need not be this plugin's).

    Called once per plugin set, by the first ``SpadePlugins.design_guides()`` (the
    designer's first round of a domain). A domain given two guides, by one plugin or two,
    is a ``PluginError`` naming both; a scaffold without its ``scaffold_task``, or anything
    but a ``DesignGuide``, is a ``PluginError`` naming the plugin."""


@hookspec
def spade_register_config_sections(register: Callable[[str, Any], None]) -> None:
    """Declare the tables of ``spade.toml`` this plugin owns: ``register(table, model)``,
    where ``model`` is a pydantic model class (or ``"module:Class"``, imported only when a
    file has the table) that validates the table as written (``[designer]`` ->
    ``DesignerConfig``). The model of pytest's ``pytest_addoption``: every table of the
    configuration tree has one owner, and a command validates the whole file once, at its
    edge (``SpadePlugins.check_config``): a bad value is a ``ConfigError`` naming the
    table, the key and the plugin; a table no plugin owns is refused with the tables that
    are known. ``[spade]`` is the core's own.

    Called once per plugin set, by the first ``SpadePlugins.config_sections()``. A table
    registered twice is a ``PluginError`` naming both plugins."""


@hookspec
def spade_register_llm_backends(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register LLM backends: ``register(name, factory, options=None)``; ``factory(**options)``
    returns an object with ``chat(batch_of_message_lists, **sampling) -> list[Completion]``
    (``spade_designer.llm.LLMBackend``). ``options`` says what a factory that takes
    ``**options`` accepts (a class or callable whose signature lists them, its
    ``"module:attr"``, or a pydantic model): ``SpadePlugins.check_options`` refuses any other,
    naming the plugin, before the factory runs. The same third argument works for sandbox
    backends, corpora and memories.

    Called once per plugin set, by the first ``SpadePlugins.llm_backends()`` or
    ``create("llm_backends", ...)``; the factory runs at each ``create``. A name registered
    twice is a ``PluginError``."""


@hookspec
def spade_register_env_runners(register: Callable[[EnvRunner], None]) -> None:
    """Register where untrusted (store) environment code runs: ``register(EnvRunner(name,
    make="module:callable", prepare="module:callable" | None))``.

    ``store_envs_run = name`` in ``[spade]`` selects a runner (``"sandbox"``, spade-sandbox's,
    is the default); the core imports the named callables only when it runs store code, so
    registering costs nothing. Called once per plugin set, the first time a runner is looked
    up (``SpadePlugins.env_runners()``); the answers are kept in the seed index, so ``import
    spade_core`` + ``gymnasium.make`` need not load the plugins. A name registered twice, by
    one plugin or two, is a ``PluginError`` naming both: which code runs untrusted
    environments never depends on load order."""


@hookspec
def spade_register_sandbox_backends(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register sandbox backends: ``register(name, factory)``; ``factory(**options)`` returns
    a ``spade_sandbox`` backend (how worker processes are started and contained).

    Called once per plugin set, by the first ``SpadePlugins.sandbox_backends()`` (a
    ``SandboxPool`` whose ``backend`` is a name); the factory runs once per pool. A name
    registered twice is a ``PluginError``."""


@hookspec
def spade_register_corpora(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register corpus sources for grounding: ``register(name, factory)``; the factory's
    result samples documents (``sample(rng) -> Document``).

    Called once per plugin set, by the first ``SpadePlugins.corpora()`` or ``create``
    (when a designer is assembled). A name registered twice is a ``PluginError``."""


@hookspec
def spade_register_memories(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register designer memories: ``register(name, factory)``; the result stores designed
    environments and retrieves prompt examples.

    Called once per plugin set, by the first ``SpadePlugins.memories()`` or ``create``
    (when a designer is assembled). A name registered twice is a ``PluginError``."""


@hookspec
def spade_register_commands(cli: typer.Typer) -> None:
    """Add commands to the ``spade`` CLI (``@cli.command()``).

    Called once each time the ``spade`` application is built (every ``spade`` run, before
    its arguments are parsed), for every plugin. A third-party plugin that raises is
    reported as one warning and skipped (the built-in ones are not guarded). A command name
    added twice is not detected: the one added last replaces the other (Typer's rule), so
    plugins name their commands after themselves (``spade sandbox ...``)."""


@hookspec
def spade_designer_reward_terms(context: DesignerRewardContext) -> dict[str, float] | None:
    """Return named terms added to the designer's reward for one environment (e.g. a
    novelty bonus or an invalid-environment penalty), or ``None``.

    Called once per designed environment of each self-play iteration, on every plugin (not
    *firstresult*). Every plugin's terms are summed; a name two plugins both return is one
    term, their sum. A non-dict answer or a non-finite value is a ``PluginError``."""


@hookspec
def spade_agent_reward_terms(context: AgentRewardContext) -> dict[str, float] | None:
    """Return named terms added to the agent's reward for one episode, or ``None``.

    Called once per finished agent episode of each self-play iteration, on every plugin
    (not *firstresult*); terms merge as for :func:`spade_designer_reward_terms`."""


@hookspec(firstresult=True)
def spade_embed_texts(texts: list[str]) -> list[list[float]] | None:
    """Return one embedding vector per text, in order (every vector the same length; any
    scale, callers normalise), or ``None`` to leave it to another plugin. *firstresult*:
    the first answer wins. Used by validation to find near-duplicate environment
    descriptions; spade_designer's built-in lexical embedder answers last (``trylast``).
    Called once per batch of descriptions validation compares; two plugins answering is
    not an error: the first in pluggy's order wins (mark a fallback ``trylast``)."""


@hookspec(firstresult=True)
def spade_admission_validator(config: SpadeConfig) -> AdmissionValidator | None:
    """Return the pipeline that decides which imported environments are admitted (an
    ``spade_core.admission.AdmissionValidator`` built for ``config``, a ``SpadeConfig``),
    or ``None`` to leave it to another plugin. Called once by each ``spade import
    --status admitted`` without ``--trust``, which closes it when done. *firstresult*:
    the first answer wins; spade-designer answers with its validation pipeline. With no
    plugin answering, such an import is refused (admitting unvalidated code takes
    ``--trust``)."""


@hookspec
def spade_register_eval_suites(register: Callable[[Any], None]) -> None:
    """Register episode evaluation suites: ``register(EpisodeSuite(...))`` once per suite
    (``spade_core.evaluation``). Called once per plugin set, the first time suites are
    looked up (``SpadePlugins.eval_suites()``, by ``spade eval``); not *firstresult*: every
    plugin's suites are collected. A suite name registered twice, by one plugin or two, is
    a ``PluginError`` naming it."""
