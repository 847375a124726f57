"""The plugin contract of SPADE: every hook a plugin may implement.

Plugins are modules or packages listed under the ``spade`` entry-point group. Each hook
receives a ``register`` callback (or the object to extend) and gives back nothing; hooks
marked *firstresult* or returning values say so. SPADE's own features are registered
through these same hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import typer

    from .domains import Domain
    from .shaping import AgentRewardContext, DesignerRewardContext

hookspec = pluggy.HookspecMarker("spade")
hookimpl = pluggy.HookimplMarker("spade")


@hookspec
def spade_register_domains(register: Callable[[Domain], None]) -> None:
    """Register domains: ``register(Domain(...))`` once per domain the plugin provides."""


@hookspec
def spade_register_llm_backends(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register LLM backends: ``register(name, factory)``; ``factory(**options)`` returns an
    object with ``chat(batch_of_message_lists, **sampling) -> list[Completion]``."""


@hookspec
def spade_register_sandbox_backends(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register sandbox backends: ``register(name, factory)``; ``factory(**options)`` returns
    a ``spade_sandbox`` backend (how worker processes are started and contained)."""


@hookspec
def spade_register_corpora(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register corpus sources for grounding: ``register(name, factory)``; the factory's
    result samples documents (``sample(rng) -> Document``)."""


@hookspec
def spade_register_memories(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register designer memories: ``register(name, factory)``; the result stores designed
    environments and retrieves prompt examples."""


@hookspec
def spade_register_commands(cli: typer.Typer) -> None:
    """Add commands to the ``spade`` CLI (``@cli.command()``)."""


@hookspec
def spade_designer_reward_terms(context: DesignerRewardContext) -> dict[str, float] | None:
    """Return named terms added to the designer's reward for one environment (e.g. a
    novelty bonus or an invalid-environment penalty), or ``None``. Every plugin's terms
    are summed and recorded by name."""


@hookspec
def spade_agent_reward_terms(context: AgentRewardContext) -> dict[str, float] | None:
    """Return named terms added to the agent's reward for one episode, or ``None``."""


@hookspec(firstresult=True)
def spade_embed_texts(texts: list[str]) -> list[list[float]] | None:
    """Return one embedding vector per text, in order (every vector the same length; any
    scale, callers normalise), or ``None`` to leave it to another plugin. *firstresult*:
    the first answer wins. Used by validation to find near-duplicate environment
    descriptions; spade_designer's built-in lexical embedder answers last (``trylast``)."""
