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
  ``spade serve`` resolves them (:func:`~spade_serve.catalog.build_catalog`); each instance
  is a :class:`~spade_sandbox.env.SandboxedEnv` in a sandbox pool the adapter owns (seeds
  too, unless ``seeds_in_process``), or, with ``url=``, a session on a ``spade serve``
  server (:class:`~spade_serve.gym_remote.RemoteTextEnv`);
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

This module imports neither TRL nor torch: the contract is duck-typed, so it lives with
serving (core and sandbox only). ``datasets`` is imported by :meth:`TrlEnvironments.dataset`
only (it comes with TRL; ``pip install spade-serve[trl]``).
"""

from __future__ import annotations

import inspect
import json
import keyword
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import GenericAlias
from typing import TYPE_CHECKING, Any, Literal, Union

from spade_core.actions import ToolCall, format_boxed, format_tool_calls
from spade_core.env import TextEnv
from spade_core.errors import EnvContractError, SpadeError
from spade_core.returns import HUNG_STEP_PENALTY
from spade_core.returns import episode_return as _core_return

from .remote_listing import LISTING_DEADLINE_S, RemoteListing

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.plugins import SpadePlugins
    from spade_sandbox.launcher import SandboxLauncher
    from spade_sandbox.pool import SandboxPool

    from .catalog import ServedEnv


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


#: Prepended to a boxed environment's first observation.
ACT_INSTRUCTIONS = (
    "Act by calling the tool `act` with one command: what you would write inside \\boxed{...}. "
    "Each call is one step; the tool returns what the environment answers."
)
#: Prepended to a tool-use environment's first observation.
ANSWER_INSTRUCTIONS = (
    "Fulfil the requests by calling the tools. When a request is done, call `answer` with your reply to the user."
)

#: Names a tool cannot take: TRL calls ``reset`` and ``get_reward`` itself (never as tools),
#: and ``answer`` is the tool the adapter gives every tool-use environment. Every other public
#: name of the adapter's classes is a read-only property a tool may replace.
_RESERVED = {"reset": "is called by TRL itself", "get_reward": "is called by TRL itself",
             "answer": "is the adapter's own tool for replying to the user"}
#: Error kinds of the environment's own code that leave its instance alive; with the errors
#: after which the instance is gone (:func:`_instance_gone`), a step's failure that is the
#: environment's: the episode ends there.
_ENV_CODE_KINDS = frozenset({"env_code", "missing_method", "contract"})


def _instance_gone(exc: BaseException) -> bool:
    """Whether the instance ended with ``exc``: its sandbox worker is gone (local,
    ``SandboxError.worker_fatal``) or the server closed its session (remote)."""
    from spade_sandbox.errors import SandboxError

    from .errors import RemoteError

    if isinstance(exc, SandboxError):
        return exc.worker_fatal
    return isinstance(exc, RemoteError) and exc.data.get("session_closed") is True




class TrlEnvError(SpadeError):
    """The adapter cannot be set up as asked (no environment matched, a tool the model
    could not be shown, a server that cannot be listed), or was used after ``close()``."""


class ToolArgumentError(ValueError):
    """A tool call whose arguments do not fit the tool; TRL shows the message to the model."""


class EpisodeOver(RuntimeError):
    """A tool call after the episode ended; the environment is not stepped."""


class EnvironmentFailed(RuntimeError):
    """The environment failed during a step (its worker died, it hung, it broke its
    contract); the episode is over. TRL shows the message to the model."""


def episode_return(last_reward: float | None, terminated: bool, *, hung: bool = False,
                   hang_penalty: float = HUNG_STEP_PENALTY) -> float:
    """The episode return every part applies (:func:`spade_core.returns.episode_return`),
    a non-finite reward the environment's broken contract."""
    return _core_return(last_reward, terminated, hung=hung, hang_penalty=hang_penalty,
                        error=lambda message: EnvContractError(message, method="step"))


# --- the environments TRL sees -------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    """One environment the adapter offers: how to open an instance, and what TRL is shown."""

    env_id: str
    uses_tools: bool
    open: Callable[[], TextEnv]


class SpadeEnvironment:
    """One TRL environment instance: a SPADE environment (sandboxed, or a remote session)
    played through tools.

    TRL shows the model every public function of the instance's class, so the class's public
    namespace belongs to the tools: the adapter keeps its own state in private attributes and
    uses only those. It offers that state read-only through properties: :attr:`env_id`,
    :attr:`steps`, :attr:`terminated`, :attr:`truncated`, :attr:`hung`, :attr:`last_reward`,
    :attr:`episode_return`, :attr:`last_seed`, :attr:`actions` (the actions stepped this
    episode, as the environment received them) and :attr:`done`. On a tool-use class a tool
    named like one of them takes its place (the tool is what the model calls; the adapter
    never reads the property); :func:`episode_state` reads the state of any instance.
    """

    _instructions: str = ""

    def __init__(self, target: _Target, owner: TrlEnvironments, env: TextEnv | None = None) -> None:
        self._target = target
        self._owner = owner
        self._env: TextEnv | None = env if env is not None else target.open()
        self._broken = False
        self._last_seed: int | None = None
        self._started = False
        self._clear()

    def _clear(self) -> None:
        self._steps = 0
        self._terminated = False
        self._truncated = False
        self._hung = False
        self._last_reward: float | None = None
        self._actions: list[str] = []

    def _over(self) -> bool:
        return self._terminated or self._truncated or self._broken

    def _return(self) -> float:
        return episode_return(self._last_reward, self._terminated, hung=self._hung, hang_penalty=self._owner.hang_penalty)

    # --- read-only state (a tool of the same name replaces one on its class) -------------
    @property
    def env_id(self) -> str:
        """The environment's id."""
        return self._target.env_id

    @property
    def steps(self) -> int:
        """Steps played this episode."""
        return self._steps

    @property
    def terminated(self) -> bool:
        """Whether the environment ended the episode."""
        return self._terminated

    @property
    def truncated(self) -> bool:
        """Whether the turn limit cut the episode."""
        return self._truncated

    @property
    def hung(self) -> bool:
        """Whether a step hung past the sandbox deadline."""
        return self._hung

    @property
    def last_reward(self) -> float | None:
        """The last step's reward (``None`` before the first step)."""
        return self._last_reward

    @property
    def last_seed(self) -> int | None:
        """The seed of the current (or last) episode."""
        return self._last_seed

    @property
    def actions(self) -> list[str]:
        """The actions stepped this episode, as the environment received them."""
        return list(self._actions)

    @property
    def done(self) -> bool:
        """Whether the episode is over (terminated, truncated, or ended by a failure)."""
        return self._over()

    @property
    def episode_return(self) -> float:
        """The return :meth:`get_reward` gives (see :func:`episode_return`)."""
        return self._return()

    # --- TRL's contract --------------------------------------------------------------
    def reset(self, **row: Any) -> str:
        """Start an episode. ``row`` is the dataset row (TRL passes its columns); its
        ``seed`` column seeds the episode, else the adapter's seed sequence does. Returns
        the instructions and the first observation, which TRL appends to the prompt."""
        self._owner._check_open()
        seed = row.get("seed")
        if seed is None:
            seed = self._owner._next_seed()
        elif isinstance(seed, bool) or not isinstance(seed, int):
            raise TrlEnvError(f"the row's seed must be an integer, got {seed!r} ({type(seed).__name__})")
        if self._broken or self._env is None:  # the last episode's worker or session is gone
            self._reopen()
        assert self._env is not None
        try:
            obs, _info = self._env.reset(seed=int(seed))
        except SpadeError as exc:
            if not _instance_gone(exc):
                raise
            self._reopen()  # the worker or session died between episodes: once more on a new one
            assert self._env is not None
            obs, _info = self._env.reset(seed=int(seed))
        self._clear()
        self._started = True
        self._last_seed = int(seed)
        return f"{self._instructions}\n\n{obs}" if self._instructions else obs

    def get_reward(self) -> float:
        """The episode's return: the last reward clipped to [-1, 1] if the environment
        terminated the episode, else 0 (``hang_penalty`` after a hung step)."""
        return self._return()

    # --- what the tools share -----------------------------------------------------------
    def _step(self, action: str) -> str:
        if not self._started:
            raise TrlEnvError(f"{self._target.env_id}: a tool was called before reset()")
        if self._over():
            how = "failed" if self._broken and not self._hung else (
                "hung" if self._hung else ("was terminated" if self._terminated else "was truncated (turn limit)"))
            raise EpisodeOver(
                f"the episode is over (it {how} after {self._steps} step(s)); this call was not played. "
                "Stop calling tools."
            )
        assert self._env is not None
        try:
            obs, reward, terminated, truncated, _info = self._env.step(action)
        except SpadeError as exc:
            kind = getattr(exc, "kind", None)
            if not (isinstance(exc, EnvContractError) or _instance_gone(exc) or kind in _ENV_CODE_KINDS):
                raise  # not the environment's failure (an action over the size limit, a closed pool)
            self._steps += 1
            self._actions.append(action)
            self._broken = True
            self._hung = kind == "timeout"
            raise EnvironmentFailed(
                f"the environment failed on this action ({kind or 'contract'}): {exc}. The episode is over."
            ) from None
        self._steps += 1
        self._actions.append(action)
        self._last_reward = float(reward)
        self._terminated = bool(terminated)
        self._truncated = bool(truncated)
        if self._terminated:
            return f"{obs}\n\n[The episode is over.]"
        if self._truncated:
            return f"{obs}\n\n[The episode is over: turn limit reached.]"
        return obs

    def _reopen(self) -> None:
        self._close_env()
        self._env = self._target.open()
        self._broken = False

    def _close_env(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            try:
                env.close()
            except SpadeError:
                pass  # its worker or session is already gone: nothing left to free

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._target.env_id} steps={self._steps} done={self._over()}>"


class BoxedEnvironment(SpadeEnvironment):
    r"""A boxed-action environment: one tool, ``act``, stepped as ``\boxed{command}``."""

    _instructions = ACT_INSTRUCTIONS

    def act(self, command: str) -> str:
        r"""Take one action in the environment.

        Args:
            command: The action, exactly as you would write it inside \boxed{...}.

        Returns:
            What the environment answers.
        """
        if not isinstance(command, str):
            raise ToolArgumentError(
                f"act(command) takes a string, got {json.dumps(command)} ({type(command).__name__}); "
                'call it as {"command": "<your action>"}'
            )
        return self._step(format_boxed(command))


class _ToolUseEnvironment(SpadeEnvironment):
    """Base of the generated tool-use classes (one per environment id)."""

    _instructions = ANSWER_INSTRUCTIONS
    #: tool name -> (parameter names, required names); set on each generated class
    _signatures: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        params, required = self._signatures[name]
        unknown = [a for a in arguments if a not in params]
        missing = [r for r in required if r not in arguments]
        if unknown or missing:
            parts = []
            if unknown:
                parts.append("unknown argument(s) " + ", ".join(repr(a) for a in unknown))
            if missing:
                parts.append("missing required argument(s) " + ", ".join(repr(m) for m in missing))
            takes = ", ".join(f"{p}{'' if p in required else ' (optional)'}" for p in params) or "no arguments"
            raise ToolArgumentError(f"{name}(): {'; '.join(parts)}. It takes: {takes}.")
        return self._step(ToolCall(name, dict(arguments)).to_tag())

    def answer(self, text: str) -> str:
        """Give your reply to the user's current request (ends that request).

        Args:
            text: Your reply to the user.

        Returns:
            What the user says next, or that the conversation is over.
        """
        if not isinstance(text, str):
            raise ToolArgumentError(f"answer(text) takes a string, got {json.dumps(text)} ({type(text).__name__})")
        return self._step(format_tool_calls([], answer=text))


@dataclass(frozen=True)
class EpisodeState:
    """What :func:`episode_state` reads of an instance (the properties of
    :class:`SpadeEnvironment`, which a tool of the same name may replace on its class)."""

    env_id: str
    steps: int
    terminated: bool
    truncated: bool
    hung: bool
    done: bool
    last_reward: float | None
    last_seed: int | None
    actions: tuple[str, ...]
    episode_return: float


def episode_state(instance: SpadeEnvironment) -> EpisodeState:
    """The state of ``instance``'s episode, whatever its tools are named."""
    return EpisodeState(
        env_id=instance._target.env_id, steps=instance._steps, terminated=instance._terminated,
        truncated=instance._truncated, hung=instance._hung, done=instance._over(),
        last_reward=instance._last_reward, last_seed=instance._last_seed, actions=tuple(instance._actions),
        episode_return=instance._return(),
    )


# --- tool-use schemas as Python signatures (what transformers reads back) --------------------

_JSON_TO_PY: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "null": type(None),
}


def _py_type(schema: Mapping[str, Any]) -> Any:
    """The type hint whose JSON schema (as transformers writes it) is closest to ``schema``:
    enums as ``Literal``, arrays with their item type, unions of types; nested object
    properties and other keywords are not expressible and are dropped."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str | int | float | bool) or v is None for v in enum):
        return Literal[tuple(enum)]
    kind = schema.get("type")
    if isinstance(kind, list):
        members = [_py_type({**schema, "type": k}) for k in kind if isinstance(k, str)]
        if not members:
            return Any
        return members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007 (built from a list)
    if kind == "array":
        items = schema.get("items")
        return GenericAlias(list, (_py_type(items),)) if isinstance(items, Mapping) and items.get("type") else list
    return _JSON_TO_PY.get(kind, Any) if isinstance(kind, str) else Any


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _tool_method(env_id: str, schema: Mapping[str, Any]) -> tuple[str, Callable[..., str], tuple[str, ...], tuple[str, ...]]:
    """A method for one OpenAI-format tool schema: named after the tool, with a signature,
    type hints and a Google-style docstring from which transformers' ``get_json_schema``
    rebuilds the schema the model is shown."""
    fn_schema = schema.get("function", schema) if isinstance(schema, Mapping) else None
    if not isinstance(fn_schema, Mapping) or not isinstance(fn_schema.get("name"), str):
        raise TrlEnvError(f"{env_id}: a tool schema has no function name: {json.dumps(schema, default=str)[:200]}")
    name = fn_schema["name"]
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name in _RESERVED:
        why = f"is reserved ({_RESERVED[name]})" if name in _RESERVED else "is not a Python identifier TRL can call"
        raise TrlEnvError(f"{env_id}: tool {name!r} {why}; this environment cannot be offered to TRL")
    parameters = fn_schema.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = [r for r in parameters.get("required") or [] if r in properties]
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints: dict[str, Any] = {}
    arg_lines = []
    for pname, pschema in properties.items():
        if not isinstance(pname, str) or not pname.isidentifier() or keyword.iskeyword(pname):
            raise TrlEnvError(
                f"{env_id}: tool {name!r} has a parameter {pname!r} that is not a Python identifier, "
                "which TRL cannot pass as a keyword; this environment cannot be offered to TRL"
            )
        pschema = pschema if isinstance(pschema, Mapping) else {}
        hints[pname] = _py_type(pschema)
        default = inspect.Parameter.empty if pname in required else None
        params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[pname]))
        desc = _one_line(pschema.get("description") or f"The {pname} argument.")
        arg_lines.append(f"    {pname}: {desc}")
    hints["return"] = str
    description = _one_line(fn_schema.get("description") or f"The {name} tool.")
    doc = description
    if arg_lines:
        doc += "\n\nArgs:\n" + "\n".join(arg_lines)
    doc += "\n\nReturns:\n    What the environment answers."

    def tool(self: _ToolUseEnvironment, **arguments: Any) -> str:
        return self._call_tool(name, arguments)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = doc
    tool.__annotations__ = hints
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    names = tuple(p.name for p in params[1:])
    return name, tool, names, tuple(required)


def tool_use_class(env_id: str, schemas: Sequence[Mapping[str, Any]]) -> type[SpadeEnvironment]:
    """The TRL environment class of one tool-use environment: its tools as methods, plus
    ``answer``. Raises :class:`TrlEnvError` for a tool TRL could not call."""
    namespace: dict[str, Any] = {"__module__": __name__, "__doc__": f"The tool-use environment {env_id} for TRL."}
    signatures: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for schema in schemas:
        name, method, names, required = _tool_method(env_id, schema)
        if name in signatures:
            raise TrlEnvError(f"{env_id}: two tools are named {name!r}")
        namespace[name] = method
        signatures[name] = (names, required)
    namespace["_signatures"] = signatures
    words = "".join(c if c.isalnum() else " " for c in env_id).split()
    class_name = "".join(w[:1].upper() + w[1:] for w in words) + "Environment"
    return type(class_name if class_name.isidentifier() else "ToolUseEnvironment", (_ToolUseEnvironment,), namespace)


# --- the factory ---------------------------------------------------------------------------


class TrlEnvironments:
    """SPADE environments for ``GRPOTrainer(environment_factory=...)``.

    ``ids`` (ids, names or ``spade/<id>``) and/or ``domain`` (every seed and admitted
    environment of it; ``skill`` keeps that skill's only) choose the environments. Local by
    default: the store and plugins of ``config`` (``None``: the active configuration, as
    ``gymnasium.make`` reads it), each instance sandboxed in ``pool`` (``None``: a pool this
    object owns and closes, made under ``config``'s ``[spade.sandbox]`` with
    ``call_timeout_s`` as the step deadline, ``None``: the settings'). With ``url`` the
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
    the factories made (TRL never closes them) and the pool it owns; it is idempotent and
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
        self._pool = pool
        self._own_pool = False
        self._call_timeout_s = call_timeout_s
        self._launcher: SandboxLauncher | None = None
        self._seeds_in_process = seeds_in_process
        self._url = url.rstrip("/") if url else None
        self._token = token
        if isinstance(max_answer_bytes, bool) or not isinstance(max_answer_bytes, int) or max_answer_bytes < 1024:
            raise TrlEnvError(f"max_answer_bytes must be an integer >= 1024, got {max_answer_bytes!r}")
        self._max_answer_bytes = max_answer_bytes
        self._listing_deadline_s = listing_deadline_s
        targets = self._remote_targets(ids, domain, skill) if url else self._local_targets(ids, domain, skill, config, plugins)
        if not targets:
            what = f"domain {domain!r}" + (f", skill {skill!r}" if skill else "")
            raise TrlEnvError(f"no environment to train on: {what} has no seed or admitted environment")
        self._targets: dict[str, _Target] = {t.env_id: t for t in targets}
        self._classes: dict[str, type[SpadeEnvironment]] = {}
        try:
            for target in self._targets.values():
                self._classes[target.env_id] = self._class_of(target)
        except BaseException:
            self.close()
            raise

    # --- choosing environments ---------------------------------------------------------
    def _local_targets(self, ids: list[str], domain: str | None, skill: str | None, config: SpadeConfig | None, plugins: SpadePlugins | None) -> list[_Target]:
        from spade_core.app.catalog import open_store

        from .catalog import build_catalog
        from .errors import UnknownEnv

        if config is None:
            from spade_core.config import load_config

            config = load_config()
        from spade_sandbox.launcher import SandboxLauncher

        self._launcher = SandboxLauncher.from_config(config)
        if plugins is None:
            from spade_core.plugins import get_plugins

            plugins = get_plugins()
        served = []
        with open_store(config, read_only=True) as store:
            try:
                if ids:
                    served.extend(build_catalog(plugins, store, ids=ids).listed())
                if domain is not None:
                    of_domain = build_catalog(plugins, store, domain=domain).listed()
                    chosen = [e for e in of_domain if skill is None or e.metadata.skill == skill]
                    if not chosen:
                        skills = ", ".join(sorted({e.metadata.skill for e in of_domain}))
                        raise TrlEnvError(f"domain {domain!r} has no environment of skill {skill!r} (its skills: {skills})")
                    served.extend(chosen)
            except UnknownEnv as exc:
                raise TrlEnvError(str(exc)) from None
        unique = list({e.id: e for e in served}.values())
        return [_Target(e.id, e.uses_tools, self._local_opener(e)) for e in unique]

    def _local_opener(self, served: ServedEnv) -> Callable[[], TextEnv]:
        meta = served.metadata
        if served.kind == "seed" and self._seeds_in_process:
            from spade_core.env import ReferenceEnvAdapter
            from spade_core.source import instantiate, load_trusted_class

            cls = load_trusted_class(served.source, meta.class_name, source_name=meta.id)
            return lambda: ReferenceEnvAdapter(lambda: instantiate(cls), max_turns=meta.max_turns, reward_range=meta.reward_range)

        def open_sandboxed() -> TextEnv:
            from spade_sandbox.env import SandboxedEnv

            return SandboxedEnv(
                served.source,
                pool=self._sandbox_pool(),
                max_turns=meta.max_turns,
                allowed_modules=served.allowed_modules,
                reward_range=meta.reward_range,
                class_name=meta.class_name,
            )

        return open_sandboxed

    def _sandbox_pool(self) -> SandboxPool:
        with self._lock:
            if self._pool is None:
                assert self._launcher is not None, "made with the local targets"
                self._pool = self._launcher.pool(call_timeout_s=self._call_timeout_s)
                self._own_pool = True
            return self._pool

    def _remote_targets(self, ids: list[str], domain: str | None, skill: str | None) -> list[_Target]:
        """The environments the server at ``url`` offers, read under one budget of bytes,
        pages and time (:class:`~spade_serve.remote_listing.RemoteListing`)."""
        reads = RemoteListing(self._url or "", token=self._token, max_answer_bytes=self._max_answer_bytes,
                              error=TrlEnvError, deadline_s=self._listing_deadline_s)
        # each id by its own route: a --all server resolves store ids it does not list
        rows: list[dict[str, Any]] = [reads.row(ref) for ref in ids]
        if domain is not None:
            found = reads.rows(domain, skill)
            if not found:
                what = f"domain {domain!r}" + (f", skill {skill!r}" if skill else "")
                raise TrlEnvError(f"the server at {self._url} lists no environment of {what}")
            rows.extend(found)
        unique = list({str(r["id"]): r for r in rows}.values())
        return [_Target(str(r["id"]), r.get("action_format") == "tool_call", self._remote_opener(str(r["id"]))) for r in unique]

    def _remote_opener(self, env_id: str) -> Callable[[], TextEnv]:
        def open_session() -> TextEnv:
            from .gym_remote import RemoteTextEnv

            return RemoteTextEnv(self._url or "", env_id, token=self._token, max_message_bytes=self._max_answer_bytes)

        return open_session

    def _class_of(self, target: _Target) -> type[SpadeEnvironment]:
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

    def _check_open(self) -> None:
        if self._closed:
            raise TrlEnvError("these environments are closed")

    def _next_seed(self) -> int:
        with self._lock:
            return self._rng.randrange(2**31)

    def _make(self, env_id: str) -> SpadeEnvironment:
        self._check_open()
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
        """Close every instance (its sandboxed environment or session) and the pool this
        object owns. Idempotent."""
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
        if self._own_pool and self._pool is not None:
            self._pool.close()

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
