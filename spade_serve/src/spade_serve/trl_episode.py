r"""The environments TRL sees: :class:`SpadeEnvironment`, one instance of a SPADE environment
(sandboxed, or a session on a ``spade serve`` server) played through tools, and its kinds:
:class:`BoxedEnvironment` (one tool, ``act``) and :class:`ToolUseEnvironment` (the base of
the classes :func:`~spade_serve.trl_tools.tool_use_class` makes from an environment's tool
schemas); the errors a tool call shows the model; the episode's return and state.

TRL shows the model every public function of an instance's class, so the class's public
namespace belongs to the tools: an instance keeps its state in private attributes and
offers it read-only through properties (:func:`episode_state` reads it whatever the tools
are named). :class:`~spade_serve.trl_env.TrlEnvironments` makes the instances.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from spade_core.actions import ToolCall, format_boxed, format_tool_calls
from spade_core.env import TextEnv
from spade_core.errors import EnvContractError, SpadeError
from spade_core.returns import HUNG_STEP_PENALTY
from spade_core.returns import episode_return as _core_return

#: Prepended to a boxed environment's first observation.
ACT_INSTRUCTIONS = (
    "Act by calling the tool `act` with one command: what you would write inside \\boxed{...}. "
    "Each call is one step; the tool returns what the environment answers."
)
#: Prepended to a tool-use environment's first observation.
ANSWER_INSTRUCTIONS = (
    "Fulfil the requests by calling the tools. When a request is done, call `answer` with your reply to the user."
)
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


@dataclass(frozen=True)
class EnvTarget:
    """One environment the adapter offers: how to open an instance, and what TRL is shown."""

    env_id: str
    uses_tools: bool
    open: Callable[[], TextEnv]


class InstanceOwner(Protocol):
    """What an instance asks of the adapter that made it
    (:class:`~spade_serve.trl_env.TrlEnvironments`)."""

    #: The return of an episode a step hung in (:func:`episode_return`).
    hang_penalty: float

    def check_open(self) -> None:
        """:class:`TrlEnvError` once the adapter is closed."""

    def next_seed(self) -> int:
        """The next seed of the adapter's sequence (a row without a ``seed`` column)."""


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

    def __init__(self, target: EnvTarget, owner: InstanceOwner, env: TextEnv | None = None) -> None:
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
        self._owner.check_open()
        seed = row.get("seed")
        if seed is None:
            seed = self._owner.next_seed()
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


class ToolUseEnvironment(SpadeEnvironment):
    """Base of the generated tool-use classes (one per environment id, :func:`~spade_serve.trl_tools.tool_use_class`)."""

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




__all__ = ["ACT_INSTRUCTIONS", "ANSWER_INSTRUCTIONS", "BoxedEnvironment", "EnvTarget", "EnvironmentFailed", "EpisodeOver",
           "EpisodeState", "InstanceOwner", "SpadeEnvironment", "ToolArgumentError", "ToolUseEnvironment", "TrlEnvError",
           "episode_return", "episode_state"]
