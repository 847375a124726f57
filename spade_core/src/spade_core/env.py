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
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
from gymnasium import spaces

from . import contract
from .errors import EnvContractError

#: Upper bound of an observation or action string, in characters.
MAX_TEXT_LENGTH = contract.MAX_TEXT_LENGTH


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
    * **A step after the end.** Once a step returned ``terminated`` or ``truncated``, the
      episode is over until ``reset()``: every way SPADE offers an environment refuses a
      further ``step`` without passing it on (:class:`EpisodeEnded`, a Gymnasium
      ``ResetNeeded``, here and in the sandbox; HTTP 409 ``EPISODE_STATE`` from ``spade
      serve``; the TRL adapter's ``EpisodeOver``). An environment asked anyway (by its own
      code, or by a caller outside SPADE) must not pay again nor say the episode goes on:
      it answers ``terminated`` (or ``truncated``) with no reward, or raises. Validation
      checks it after every episode it ends.
    """

    # ``render_fps`` has no meaning for text, but Gymnasium's checker warns when it is absent.
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}
    observation_space = UnicodeText()
    action_space = UnicodeText()
    reward_range: tuple[float, float] = (0.0, 1.0)

    def solution(self) -> list[str] | str:
        raise NotImplementedError(f"{type(self).__name__} does not provide solution()")


class EpisodeEnded(EnvContractError, gym.error.ResetNeeded):
    """``step()`` was called after the episode ended (``terminated`` or ``truncated``):
    call ``reset()`` first. Nothing was passed to the environment."""

    def __init__(self, message: str = "the episode is over (terminated or truncated): call reset() before step()") -> None:
        super().__init__(message, method="step")


@runtime_checkable
class ReferenceEnv(Protocol):
    """Structural type of a reference-format environment instance."""

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]: ...


def describe_shape(value: Any) -> str:
    """What a value looks like, for contract messages: ``str``, ``(str, float, bool, dict)``."""
    return contract.describe_shape(value)


def check_reset_result(result: Any) -> tuple[str, dict[str, Any]]:
    """Validate what a reference env's ``reset`` returned: exactly ``(observation, info)``
    (the rules of :mod:`spade_core.contract`, which the sandbox applies too).

    A bare observation (the old Gym ``reset``) is a contract violation, not something to
    repair: the reference implementation's own check rejects it too.
    """
    obs, info = contract.reset_pair(result, EnvContractError)
    return contract.observation(obs, "reset", EnvContractError), contract.info(info, "reset", EnvContractError)


def check_step_result(
    result: Any, reward_range: tuple[float, float] = (-math.inf, math.inf)
) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """Validate a ``step`` result: the 5-tuple, finite reward within ``reward_range``, bool
    flags (the rules of :mod:`spade_core.contract`, which the sandbox applies too). The old
    Gym 4-tuple ``(obs, reward, done, info)`` is a contract violation (its ``done`` cannot
    say whether the task ended or was cut off)."""
    obs, reward, terminated, truncated, info = contract.step_tuple(result, EnvContractError)
    obs = contract.observation(obs, "step", EnvContractError)
    r = contract.reward_in_range(contract.reward(reward, EnvContractError), reward_range, EnvContractError)
    return (
        obs,
        r,
        contract.flag(terminated, "terminated", EnvContractError),
        contract.flag(truncated, "truncated", EnvContractError),
        contract.info(info, "step", EnvContractError),
    )


def valid_reward_range(value: Any) -> tuple[float, float] | None:
    """``value`` as a ``(low, high)`` pair of finite numbers with ``low < high``, else ``None``."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        return None
    lo, hi = value
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in (lo, hi)):
        return None
    lo, hi = float(lo), float(hi)
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi else None


def _class_attribute(source: str, attribute: str, class_name: str | None) -> tuple[str, Any] | None:
    """``(class, statement)`` of the nearest literal-or-not assignment of ``attribute`` in
    the body of the environment class of ``source`` or of a base defined in the same
    source; ``None`` when none of them assigns it. ``SyntaxError`` propagates."""
    import ast

    from .source import env_class_node

    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if class_name is not None and class_name in classes:
        start: ast.ClassDef | None = classes[class_name]
    else:
        try:
            start = env_class_node(tree)
        except Exception:  # no environment class: the static stage reports it
            return None
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop(0)
        if node is None or node.name in seen:
            continue
        seen.add(node.name)
        for stmt in node.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
            if any(isinstance(t, ast.Name) and t.id == attribute for t in targets):
                return node.name, stmt
        todo += [classes.get(b.id) for b in node.bases if isinstance(b, ast.Name)]
    return None


def _literal(stmt: Any) -> Any:
    import ast

    return ast.literal_eval(stmt.value)


def declared_reward_range(source: str, class_name: str | None = None) -> tuple[float, float] | None:
    """The reward range an environment source declares with a class attribute
    ``reward_range = (low, high)`` (the old Gym convention) on its environment class or a
    base class defined in the same source, nearest first; ``None`` when it declares none
    there (a base from elsewhere, such as the tool-use domain's, may still declare one).

    Raises :class:`~spade_core.errors.EnvContractError` when the declaration is not a
    pair of literal finite numbers with ``low < high``; ``SyntaxError`` propagates.
    """
    found = _class_attribute(source, "reward_range", class_name)
    if found is None:
        return None
    owner, stmt = found
    try:
        value = _literal(stmt)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None  # computed (``reward_range = REWARD_RANGE``): only a run tells
    pair = valid_reward_range(value)
    if pair is None:
        raise EnvContractError(
            f"class {owner} declares reward_range = {value!r} at line {stmt.lineno}; "
            "expected (low, high), finite numbers with low < high",
            method="reward_range",
        )
    return pair


def declares_fixed_instance(source: str, class_name: str | None = None) -> bool:
    """Whether the environment class (or a base in the same source) says ``fixed_instance
    = True``: one game whatever the seed, on purpose (what the metadata's
    ``fixed_instance`` says, for a source that comes without metadata)."""
    try:
        found = _class_attribute(source, "fixed_instance", class_name)
        return found is not None and _literal(found[1]) is True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


class ReferenceEnvAdapter(TextEnv):
    """A Gymnasium ``TextEnv`` around a reference-format environment.

    ``inner`` is either an instance or a zero-argument factory. The adapter:

    * seeds Gymnasium's RNG through ``super().reset(seed=seed)`` and passes the seed on
      (``reset()`` without a seed passes one drawn from that RNG, kept in ``last_seed``);
    * validates every value coming back (types, sizes, finite in-range reward), repairing
      nothing: a bare observation from ``reset`` or a 4-tuple from ``step`` is an
      :class:`~spade_core.errors.EnvContractError` naming the method and what it returned;
    * enforces ``reward_range``: the one given, else the inner class's ``reward_range``
      attribute, else [0, 1];
    * keeps ``terminated`` and ``truncated`` apart and truncates at ``max_turns``;
    * refuses a step after the episode ended (:class:`EpisodeEnded`), so the inner
      environment never sees one;
    * forwards ``solution()``, ``close()`` and tool schemas (``tools``) when present.
    """

    def __init__(
        self,
        inner: Any | Callable[[], Any],
        *,
        max_turns: int | None = None,
        reward_range: tuple[float, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        # A class has ``step`` as an attribute too, so it must be told apart from an instance
        # explicitly; anything else callable without ``step`` is a factory.
        is_factory = isinstance(inner, type) or (callable(inner) and not hasattr(inner, "step"))
        self._inner: Any = inner() if is_factory else inner
        if not callable(getattr(self._inner, "reset", None)) or not callable(getattr(self._inner, "step", None)):
            raise EnvContractError(f"{type(self._inner).__name__} has no reset()/step() methods")
        self.max_turns = max_turns
        # Given explicitly (the metadata's), else the class's own ``reward_range`` (the old
        # Gym convention, inherited like any attribute), else [0, 1].
        self.reward_range = reward_range or valid_reward_range(getattr(self._inner, "reward_range", None)) or (0.0, 1.0)
        self.render_mode = render_mode
        self._turn = 0
        self._ended = False
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
        self._ended = False
        self._last_obs = obs
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"action must be str, got {type(action).__name__}")
        if self._ended:
            raise EpisodeEnded()
        obs, reward, terminated, truncated, info = check_step_result(
            self._inner.step(action), self.reward_range
        )
        self._turn += 1
        if not terminated and self.max_turns is not None and self._turn >= self.max_turns:
            truncated = True
        self._ended = terminated or truncated
        self._last_obs = obs
        return obs, reward, terminated, truncated, info

    def solution(self) -> list[str] | str:
        fn = getattr(self._inner, "solution", None)
        if fn is None:
            raise NotImplementedError(f"{type(self._inner).__name__} does not provide solution()")
        return contract.solution(fn(), EnvContractError)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI-format tool schemas, for tool-use environments; ``[]`` otherwise."""
        for attr in ("get_tool_schemas", "tool_schemas"):
            fn = getattr(self._inner, attr, None)
            if fn is not None:
                return contract.tool_schemas(fn() if callable(fn) else fn, EnvContractError)
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
