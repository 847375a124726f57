r"""The environment contract.

Two shapes of environment exist:

* **reference format** — what the designer LLM writes (and what the reference
  implementation's pools contain): one class whose name ends in ``Env`` with
  ``reset(seed=None) -> (str, dict)``,
  ``step(action) -> (str, float, bool, bool, dict)``, ``solution()`` and ``close()``.
  Actions are ``\boxed{...}`` commands or tool-call tags; rewards are partial progress in
  [0, 1], 1.0 meaning success.
* **Gymnasium** — :class:`TextEnv`, a ``gymnasium.Env[str, str]`` with Unicode text spaces.

:class:`ReferenceEnvAdapter` turns any object of the first shape (a local instance, or a
proxy to one living in a sandbox worker) into the second, checking every value that
crosses. Environment authors who want Gymnasium directly subclass :class:`TextEnv`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol, SupportsFloat, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .errors import EnvContractError

#: Upper bound of an observation or action string, in characters.
MAX_TEXT_LENGTH = 65_536


class UnicodeText(spaces.Text):
    """A text space that contains every ``str`` of bounded length.

    ``gymnasium.spaces.Text`` defaults to an alphanumeric charset, so an ordinary sentence
    fails ``check_env``. Membership here is any Unicode string within the length bounds;
    sampling draws from printable ASCII plus a few non-ASCII characters so fuzzers exercise
    encodings too.
    """

    _SAMPLE_CHARSET = (
        "".join(chr(c) for c in range(32, 127)) + "\n\téàüßλπ中文😀"
    )

    def __init__(self, max_length: int = MAX_TEXT_LENGTH, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=self._SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"


class TextEnv(gym.Env[str, str]):
    """Base class of text environments.

    Contract (as ``gymnasium.Env``, specialised to text):

    * ``reset(seed=None, options=None) -> (observation: str, info: dict)``; subclasses call
      ``super().reset(seed=seed)`` first so ``self.np_random`` is seeded, and the same seed
      followed by the same actions must give the same trajectory.
    * ``step(action: str) -> (observation, reward, terminated, truncated, info)``:
      ``terminated`` means the task ended (success or failure) inside the MDP;
      ``truncated`` means it was cut from outside (a turn limit); both are plain ``bool``.
      ``reward`` is a finite float within :attr:`reward_range`.
    * ``solution()`` returns a reference answer: a list of actions that, replayed from
      ``reset(seed)``, reaches full reward — or a string when it cannot be replayed.
    """

    # ``render_fps`` has no meaning for text, but Gymnasium's checker warns when it is absent.
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}
    observation_space = UnicodeText()
    action_space = UnicodeText()
    reward_range: tuple[float, float] = (0.0, 1.0)

    def solution(self) -> list[str] | str:
        raise NotImplementedError(f"{type(self).__name__} does not provide solution()")


@runtime_checkable
class ReferenceEnv(Protocol):
    """Structural type of a reference-format environment instance."""

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]: ...


def _check_obs(value: Any, method: str) -> str:
    if not isinstance(value, str):
        raise EnvContractError(
            f"{method}() returned an observation of type {type(value).__name__}, expected str",
            method=method,
        )
    if len(value) > MAX_TEXT_LENGTH:
        raise EnvContractError(
            f"{method}() returned an observation of {len(value)} characters (limit {MAX_TEXT_LENGTH})",
            method=method,
        )
    return value


def _check_info(value: Any, method: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise EnvContractError(
            f"{method}() returned info of type {type(value).__name__}, expected dict", method=method
        )
    return value


def check_reset_result(result: Any) -> tuple[str, dict[str, Any]]:
    """Validate what a reference env's ``reset`` returned; accept a bare observation too."""
    if isinstance(result, str):  # some published envs return only the observation
        return result, {}
    if not isinstance(result, tuple) or len(result) != 2:
        raise EnvContractError("reset() must return (observation: str, info: dict)", method="reset")
    return _check_obs(result[0], "reset"), _check_info(result[1], "reset")


def check_step_result(
    result: Any, reward_range: tuple[float, float] = (-math.inf, math.inf)
) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """Validate a ``step`` result: types, finite reward within ``reward_range``, bool flags."""
    if not isinstance(result, tuple) or len(result) not in (4, 5):
        raise EnvContractError(
            "step() must return (observation, reward, terminated, truncated, info)", method="step"
        )
    if len(result) == 4:  # old gym (obs, reward, done, info)
        obs, reward, done, info = result
        terminated, truncated = done, False
    else:
        obs, reward, terminated, truncated, info = result
    obs = _check_obs(obs, "step")
    if isinstance(reward, bool) or not isinstance(reward, SupportsFloat):
        raise EnvContractError(
            f"step() returned a reward of type {type(reward).__name__}, expected a number", method="step"
        )
    r = float(reward)
    if not math.isfinite(r):
        raise EnvContractError(f"step() returned a non-finite reward {r!r}", method="step")
    lo, hi = reward_range
    if not lo - 1e-9 <= r <= hi + 1e-9:
        raise EnvContractError(f"step() returned reward {r} outside the declared range [{lo}, {hi}]", method="step")
    for flag_name, flag in (("terminated", terminated), ("truncated", truncated)):
        # Only real booleans: a truthy int, string or None hides a bug in the env (``done = 1``
        # for "one turn left"), and ``check_env`` requires a plain bool downstream.
        if not isinstance(flag, (bool, np.bool_)):
            raise EnvContractError(
                f"step() returned {flag_name}={flag!r} of type {type(flag).__name__}, expected bool",
                method="step",
            )
    return obs, r, bool(terminated), bool(truncated), _check_info(info, "step")


class ReferenceEnvAdapter(TextEnv):
    """A Gymnasium ``TextEnv`` around a reference-format environment.

    ``inner`` is either an instance or a zero-argument factory. The adapter:

    * seeds Gymnasium's RNG through ``super().reset(seed=seed)`` and passes the seed on
      (``reset()`` without a seed passes one drawn from that RNG, kept in ``last_seed``);
    * validates every value coming back (types, sizes, finite in-range reward);
    * keeps ``terminated`` and ``truncated`` apart and truncates at ``max_turns``;
    * forwards ``solution()``, ``close()`` and tool schemas (``tools``) when present.
    """

    def __init__(
        self,
        inner: Any | Callable[[], Any],
        *,
        max_turns: int | None = None,
        reward_range: tuple[float, float] = (0.0, 1.0),
        render_mode: str | None = None,
    ) -> None:
        # A class has ``step`` as an attribute too, so it must be told apart from an instance
        # explicitly; anything else callable without ``step`` is a factory.
        is_factory = isinstance(inner, type) or (callable(inner) and not hasattr(inner, "step"))
        self._inner: Any = inner() if is_factory else inner
        if not callable(getattr(self._inner, "reset", None)) or not callable(getattr(self._inner, "step", None)):
            raise EnvContractError(f"{type(self._inner).__name__} has no reset()/step() methods")
        self.max_turns = max_turns
        self.reward_range = reward_range
        self.render_mode = render_mode
        self._turn = 0
        self._last_obs = ""
        #: The seed the inner environment received at the last ``reset`` (derived from
        #: Gymnasium's RNG when ``reset`` was called without one): replays the episode.
        self.last_seed: int | None = None

    @property
    def inner(self) -> Any:
        return self._inner

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:
            # Reference envs seed their own ``random.Random(seed)``; with ``None`` they would
            # draw from OS entropy and ``reset(seed=s); reset()`` would not be reproducible.
            # Deriving the inner seed from Gymnasium's RNG makes every episode replayable.
            seed = int(self.np_random.integers(0, 2**31 - 1))
        self.last_seed = seed
        obs, info = check_reset_result(self._inner.reset(seed=seed))
        self._turn = 0
        self._last_obs = obs
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"action must be str, got {type(action).__name__}")
        obs, reward, terminated, truncated, info = check_step_result(
            self._inner.step(action), self.reward_range
        )
        self._turn += 1
        if not terminated and self.max_turns is not None and self._turn >= self.max_turns:
            truncated = True
        self._last_obs = obs
        return obs, reward, terminated, truncated, info

    def solution(self) -> list[str] | str:
        fn = getattr(self._inner, "solution", None)
        if fn is None:
            raise NotImplementedError(f"{type(self._inner).__name__} does not provide solution()")
        sol = fn()
        if isinstance(sol, tuple):
            sol = list(sol)
        if isinstance(sol, list):
            if not all(isinstance(a, str) for a in sol):
                raise EnvContractError("solution() list must contain only str actions", method="solution")
            return sol
        if isinstance(sol, str):
            return sol
        raise EnvContractError(
            f"solution() returned {type(sol).__name__}; expected list[str] or str", method="solution"
        )

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI-format tool schemas, for tool-use environments; ``[]`` otherwise."""
        for attr in ("get_tool_schemas", "tool_schemas"):
            fn = getattr(self._inner, attr, None)
            if fn is not None:
                out = fn() if callable(fn) else fn
                return list(out or [])
        return []

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_obs
        return None

    def close(self) -> None:
        fn = getattr(self._inner, "close", None)
        if fn is not None:
            fn()
        super().close()
