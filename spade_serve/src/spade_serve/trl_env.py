r"""Registry environments as TRL's ``environment_factory``: a standard ``GRPOTrainer`` run
trains an agent on SPADE environments, without the self-play loop.

TRL's contract (trl 1.16, ``GRPOTrainer(environment_factory=...)``), which this module
follows:

* the factory is a zero-argument callable returning an environment instance, or a dict of
  them keyed by name; with a dict every dataset row names its environment in an
  ``environment`` column, and only that environment's tools appear in its prompt;
* TRL calls each factory once at start-up (a probe: its methods become the tool schemas)
  and then again whenever a batch needs more concurrent instances; instances are kept and
  reused, one per rollout at a time;
* ``reset(**row)`` is called before each rollout with the dataset row's columns; a string
  it returns is appended to the last user message;
* every public *function* of the instance's class except ``reset`` and ``get_reward`` is a
  tool: transformers builds its schema from the type hints and the Google-style
  docstring, and TRL calls it with the model's arguments as keywords. An exception becomes
  ``{"error": "<message>"}`` in the tool message the model reads next;
* ``get_reward()`` (no argument, a float) is called once per finished rollout and is a
  reward source of weight 1 named after the instance's class.

What this module adds on top (:class:`TrlEnvironments`):

* environments chosen by ids, or by a domain (optionally one skill), resolved as
  ``spade serve`` resolves them (:mod:`spade_serve.trl_targets`); each instance opened as
  ``spade serve`` opens a session's (:class:`~spade_serve.env_factory.SandboxEnvFactory`):
  in a sandbox pool the adapter owns, seeds too unless ``seeds_in_process`` (then in a
  worker of a trusted pool, under the same deadline), or, with ``url=``, a session on a
  ``spade serve`` server (:class:`~spade_serve.gym_remote.RemoteTextEnv`);
* boxed environments get one tool, ``act(command)``: the adapter steps the environment with
  ``\boxed{command}`` and returns its observation; tool-use environments get their own
  tools (one method per OpenAI-format schema, stepped as ``<tool_call>`` tags) plus
  ``answer(text)``, stepped as ``<answer>text</answer>``;
* the reward is the episode return of the self-play trainer
  (``spade_trainer.rewards.episode_return``): the last step's reward clipped to [-1, 1]
  when the environment terminated the episode, else 0 (truncated by its turn limit, cut by
  TRL's token or tool-call budget, or never stepped); a step that hung past the sandbox
  deadline ends the episode with ``hang_penalty`` (-0.5);
* :meth:`TrlEnvironments.dataset` gives the rows to train on (``environment`` and
  ``seed`` columns): the ``num_generations`` rollouts of one row play the same seed, so a
  GRPO group compares completions on the same episode.

The instances' classes are :mod:`spade_serve.trl_episode`'s, a tool-use environment's made
from its tool schemas by :mod:`spade_serve.trl_tools`; this module is the factory TRL is
given, and re-exports what a training script uses of them.

This module imports neither TRL nor torch: the contract is duck-typed, so it lives with
serving (core and sandbox only). ``datasets`` is imported by :meth:`TrlEnvironments.dataset`
only (it comes with TRL; ``pip install spade-serve[trl]``).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from spade_core.env import TextEnv
from spade_core.errors import SpadeError
from spade_core.returns import HUNG_STEP_PENALTY

from .env_factory import SandboxEnvFactory
from .remote_listing import LISTING_DEADLINE_S
from .trl_episode import (
    ACT_INSTRUCTIONS,
    ANSWER_INSTRUCTIONS,
    BoxedEnvironment,
    EnvironmentFailed,
    EnvTarget,
    EpisodeOver,
    EpisodeState,
    SpadeEnvironment,
    ToolArgumentError,
    TrlEnvError,
    episode_return,
    episode_state,
)
from .trl_targets import local_targets, remote_targets
from .trl_tools import tool_use_class

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.plugins import SpadePlugins
    from spade_sandbox.pool import SandboxPool


__all__ = [
    "ACT_INSTRUCTIONS",
    "ANSWER_INSTRUCTIONS",
    "HUNG_STEP_PENALTY",
    "BoxedEnvironment",
    "EnvironmentFailed",
    "EpisodeOver",
    "EpisodeState",
    "SpadeEnvironment",
    "ToolArgumentError",
    "TrlEnvError",
    "TrlEnvironments",
    "episode_return",
    "episode_state",
    "tool_use_class",
]


class TrlEnvironments:
    """SPADE environments for ``GRPOTrainer(environment_factory=...)``.

    ``ids`` (ids, names or ``spade/<id>``) and/or ``domain`` (every seed and admitted
    environment of it; ``skill`` keeps that skill's only) choose the environments. Local by
    default: the store and plugins of ``config`` (``None``: the active configuration, as
    ``gymnasium.make`` reads it), each instance sandboxed in ``pool`` (``None``: a pool this
    object owns and closes, made under ``config``'s ``[spade.sandbox]`` with
    ``call_timeout_s`` as the step deadline, ``None``: the settings'), seeds too unless
    ``seeds_in_process`` (trusted plugin code: then each in a worker of a trusted pool this
    object owns, under the same deadline; :attr:`sandbox` opens them all). With ``url`` the
    environments are those a ``spade serve`` server lists, each instance a session on it
    (``token``: the server's bearer token; ``max_answer_bytes``: the largest listing or
    session message read from it, past which the read stops with a :class:`TrlEnvError` or
    :class:`~spade_core.app.http_reads.AnswerTooLarge`; ``listing_deadline_s``: how long
    reading what it offers may take, every page and id together; the listing is also bounded
    in pages and bytes, :mod:`spade_serve.remote_listing`).

    Use::

        with TrlEnvironments(domain="games", skill="deduction") as envs:
            trainer = GRPOTrainer(model, args=GRPOConfig(...), train_dataset=envs.dataset(64),
                                  environment_factory=envs.environment_factory)
            trainer.train()

    :attr:`environment_factory` is a dict ``{env_id: factory}`` (TRL's multi-environment
    form), :meth:`dataset` the rows that route to it; :meth:`factory` is the plain callable
    of one environment, for a run without a dataset. :meth:`close` closes every instance
    the factories made (TRL never closes them) and the pools it made; it is idempotent and
    runs on leaving the ``with`` block.
    """

    def __init__(
        self,
        ids: Iterable[str] = (),
        *,
        domain: str | None = None,
        skill: str | None = None,
        url: str | None = None,
        token: str | None = None,
        config: SpadeConfig | None = None,
        plugins: SpadePlugins | None = None,
        pool: SandboxPool | None = None,
        seeds_in_process: bool = False,
        call_timeout_s: float | None = None,
        seed: int = 0,
        hang_penalty: float = HUNG_STEP_PENALTY,
        max_answer_bytes: int = 8 * 1024 * 1024,
        listing_deadline_s: float = LISTING_DEADLINE_S,
    ) -> None:
        ids = [ids] if isinstance(ids, str) else list(ids)
        if not ids and domain is None:
            raise TrlEnvError("name environment ids or a domain to train on")
        if skill is not None and domain is None:
            raise TrlEnvError(f"skill {skill!r} needs a domain (skills are named within one)")
        self.hang_penalty = float(hang_penalty)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._instances: list[SpadeEnvironment] = []
        self._spares: dict[str, TextEnv] = {}
        self._closed = False
        self._factory: SandboxEnvFactory | None = None
        self._url = url.rstrip("/") if url else None
        if isinstance(max_answer_bytes, bool) or not isinstance(max_answer_bytes, int) or max_answer_bytes < 1024:
            raise TrlEnvError(f"max_answer_bytes must be an integer >= 1024, got {max_answer_bytes!r}")
        if self._url:
            targets = remote_targets(self._url, ids, domain, skill, token=token, max_answer_bytes=max_answer_bytes,
                                     listing_deadline_s=listing_deadline_s)
        else:
            targets = self._local_targets(ids, domain, skill, config, plugins,
                                          pool=pool, seeds_in_process=seeds_in_process, call_timeout_s=call_timeout_s)
        if not targets:
            what = f"domain {domain!r}" + (f", skill {skill!r}" if skill else "")
            raise TrlEnvError(f"no environment to train on: {what} has no seed or admitted environment")
        self._targets: dict[str, EnvTarget] = {t.env_id: t for t in targets}
        self._classes: dict[str, type[SpadeEnvironment]] = {}
        try:
            for target in self._targets.values():
                self._classes[target.env_id] = self._class_of(target)
        except BaseException:
            self.close()
            raise

    # --- choosing environments ---------------------------------------------------------
    def _local_targets(self, ids: list[str], domain: str | None, skill: str | None, config: SpadeConfig | None,
                       plugins: SpadePlugins | None, *, pool: SandboxPool | None, seeds_in_process: bool,
                       call_timeout_s: float | None) -> list[EnvTarget]:
        from spade_core.app.catalog import Catalog, open_store
        from spade_sandbox.launcher import SandboxLauncher

        if config is None:
            from spade_core.config import load_config

            config = load_config()
        if plugins is None:
            from spade_core.plugins import get_plugins

            plugins = get_plugins()
        self._factory = SandboxEnvFactory(SandboxLauncher.from_config(config), trust_seeds=seeds_in_process, pool=pool,
                                          call_timeout_s=call_timeout_s)
        with open_store(config, read_only=True) as store:
            return local_targets(Catalog(plugins, store), self._factory, ids, domain, skill)

    @property
    def sandbox(self) -> SandboxEnvFactory | None:
        """What opens the local instances (and holds their pools); ``None`` for a server's
        sessions."""
        return self._factory

    def _class_of(self, target: EnvTarget) -> type[SpadeEnvironment]:
        if not target.uses_tools:
            return BoxedEnvironment
        # The schemas are read from one instance, kept as the first factory call's.
        env = target.open()
        self._spares[target.env_id] = env
        schemas = env.tools if hasattr(env, "tools") else []
        if not schemas:  # a remote session reports its tools at the first reset
            env.reset(seed=0)
            schemas = list(getattr(env, "tools", []) or [])
        if not schemas:
            raise TrlEnvError(f"{target.env_id} is a tool-use environment without tool schemas")
        return tool_use_class(target.env_id, schemas)

    # --- what TRL gets ------------------------------------------------------------------
    @property
    def env_ids(self) -> list[str]:
        """The chosen environments, in order."""
        return list(self._targets)

    def environment_class(self, env_id: str) -> type[SpadeEnvironment]:
        """The class of ``env_id``'s instances (its public functions are its tools)."""
        return self._classes[self._known(env_id)]

    def factory(self, env_id: str | None = None) -> Callable[[], SpadeEnvironment]:
        """The zero-argument factory of one environment (``None``: the only one chosen)."""
        if env_id is None:
            if len(self._targets) != 1:
                raise TrlEnvError(f"{len(self._targets)} environments are chosen: name one, or use environment_factory")
            env_id = next(iter(self._targets))
        env_id = self._known(env_id)

        def make() -> SpadeEnvironment:
            return self._make(env_id)

        make.__name__ = "make_" + "".join(c if c.isalnum() else "_" for c in env_id)
        return make

    @property
    def environment_factory(self) -> dict[str, Callable[[], SpadeEnvironment]]:
        """``{env_id: factory}``: TRL's multi-environment form (pair it with :meth:`dataset`)."""
        return {env_id: self.factory(env_id) for env_id in self._targets}

    def dataset_rows(self, episodes: int, *, seed: int = 0, prompt: str = "") -> list[dict[str, Any]]:
        """``episodes`` rows cycling through the environments: ``prompt`` (one user message,
        to which ``reset`` appends the instructions and first observation), ``environment``
        and ``seed`` (``seed``, ``seed + 1``, ...)."""
        if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
            raise TrlEnvError(f"episodes must be a positive integer, got {episodes!r}")
        ids = list(self._targets)
        return [
            {"prompt": [{"role": "user", "content": prompt}], "environment": ids[i % len(ids)], "seed": seed + i}
            for i in range(episodes)
        ]

    def dataset(self, episodes: int, *, seed: int = 0, prompt: str = "") -> Any:
        """:meth:`dataset_rows` as a ``datasets.Dataset`` (what ``GRPOTrainer`` takes)."""
        try:
            from datasets import Dataset
        except ImportError:
            raise TrlEnvError("the 'datasets' package is needed for dataset(): pip install 'spade-serve[trl]'") from None
        return Dataset.from_list(self.dataset_rows(episodes, seed=seed, prompt=prompt))

    @property
    def instances(self) -> list[SpadeEnvironment]:
        """Every instance the factories made so far (TRL's probes included)."""
        with self._lock:
            return list(self._instances)

    # --- lifecycle ----------------------------------------------------------------------
    def _known(self, env_id: str) -> str:
        ref = env_id.removeprefix("spade/")
        if ref in self._targets:
            return ref
        raise TrlEnvError(f"{env_id!r} is not among the chosen environments ({', '.join(self._targets)})")

    def check_open(self) -> None:
        """:class:`TrlEnvError` once closed."""
        if self._closed:
            raise TrlEnvError("these environments are closed")

    def next_seed(self) -> int:
        """The next seed of this adapter's sequence (for a row without a ``seed`` column)."""
        with self._lock:
            return self._rng.randrange(2**31)

    def _make(self, env_id: str) -> SpadeEnvironment:
        self.check_open()
        target = self._targets[env_id]
        with self._lock:
            spare = self._spares.pop(env_id, None)
        instance = self._classes[env_id](target, self, spare)
        with self._lock:
            if self._closed:
                instance._close_env()
                raise TrlEnvError("these environments are closed")
            self._instances.append(instance)
        return instance

    def close(self) -> None:
        """Close every instance (its sandboxed environment or session) and the pools this
        object made. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            instances, self._instances = self._instances, []
            spares, self._spares = list(self._spares.values()), {}
        for instance in instances:
            instance._close_env()
        for env in spares:
            try:
                env.close()
            except SpadeError:
                pass
        if self._factory is not None:
            self._factory.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> TrlEnvironments:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self._url or "local"
        return f"<TrlEnvironments {len(self._targets)} env(s) ({where}): {', '.join(list(self._targets)[:4])}>"
