"""The contract of episode evaluation suites: what ``spade eval`` plays a policy on.

A plugin registers an :class:`EpisodeSuite` through ``spade_register_eval_suites``; its
``items(context, size=, seed=, **options)`` lists the episodes to play, each an
:class:`EvalItem` that makes its own environment (a reference-format object or a
:class:`~spade_core.env.TextEnv`: ``reset(seed) -> (obs, info)``, ``step(action) -> (obs,
reward, terminated, truncated, info)``). The harness plays them batched, reports success
rate, mean return and turns per ``group`` (a skill, a task) and overall.

``trusted`` says where the environments run: a suite of plugin code (procedural task
generators such as Reasoning-Gym) runs in the evaluating process, as seed environments do;
a suite over store environments makes them through the sandbox (``spade_core.app.play.open_env``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import SpadeConfig
    from .plugins import SpadePlugins
    from .store import EnvStore

__all__ = ["EpisodeSuite", "EvalItem", "SuiteContext"]


@dataclass(frozen=True)
class EvalItem:
    """One episode to play: ``make_env()`` builds a fresh environment, reset with ``seed``."""

    group: str
    seed: int
    make_env: Callable[[], Any]
    max_turns: int = 25
    #: What the episode is of (an environment id, a task name), for the per-episode rows.
    label: str = ""
    #: A column of the suite's summary table (the paper's "RG-Math", say), or ``""``. The
    #: harness reports each column as the mean of its groups' success rates, each group
    #: (one task) weighing the same however many of its episodes were played.
    column: str = ""


@dataclass(frozen=True)
class SuiteContext:
    """What a suite may need to list its items: the configuration, the plugin set and the
    store (opened read-only by the caller)."""

    config: SpadeConfig
    plugins: SpadePlugins
    store: EnvStore | None = None
    #: A ``contextlib.ExitStack`` the caller closes after the evaluation: a suite enters
    #: what its environments need open until then (another store, a dataset file).
    resources: Any = None


@dataclass(frozen=True)
class EpisodeSuite:
    """A named evaluation suite of episodes."""

    name: str
    description: str
    items: Callable[..., Sequence[EvalItem]]
    #: Its environments are plugin code run in this process (``False``: store code, run in
    #: the sandbox by the items' ``make_env``).
    trusted: bool = True
    #: The options ``items`` takes beyond ``size`` and ``seed``, with a line each (for ``--help``).
    options: dict[str, str] = field(default_factory=dict)
    #: What the suite's source prescribes for ``size`` (episodes per task), ``max_new_tokens``
    #: and ``temperature``; ``spade eval`` uses them where its command line sets none.
    defaults: dict[str, Any] = field(default_factory=dict)
