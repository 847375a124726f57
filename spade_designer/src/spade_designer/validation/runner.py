"""What the pipeline needs from whatever runs environment code, and how it drives it.

:class:`EnvRunner` is the slice of ``spade_sandbox.SandboxPool`` the pipeline uses; the
production path always passes a real pool. :class:`Instance` drives one spawned
environment through a runner and checks every value that comes back against the
pipeline's invariants, turning each violation into a :class:`Rejection` with a reason code.
Those invariants are the environment contract's (:mod:`spade_core.contract`, the checks and
messages ``spade_core.env`` and the sandbox apply), with the pipeline's own observation bound;
a violation's reason code is read from the contract's message, as for one the sandbox raised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import spade_core.contract as contract
from spade_core.errors import EnvContractError
from spade_sandbox.errors import SandboxError, SandboxUnavailable

from .codes import Reason


class EnvRunner(Protocol):
    """The runner interface (``spade_sandbox.SandboxPool`` implements it)."""

    def spawn(self, source: str, allowed_modules: Sequence[str] = (), class_name: str | None = None) -> Any: ...

    def reset(self, handle: Any, seed: int | None = None) -> Any: ...

    def step(self, handle: Any, action: str) -> Any: ...

    def call(self, handle: Any, method: str) -> Any: ...

    def close_env(self, handle: Any) -> None: ...


class Rejection(Exception):
    """Raised inside a stage: the candidate breaks an invariant.

    ``actions`` (with ``seed``) is a replayable action list that reproduces the failure.
    """

    def __init__(
        self,
        code: Reason,
        message: str,
        *,
        actions: list[str] | None = None,
        seed: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.actions = actions
        self.seed = seed
        self.details = details or {}


#: Sandbox error kind -> reason code, for the errors after which the worker is gone
#: (``SandboxError.worker_fatal``; an unavailable sandbox is no verdict on the candidate).
_FATAL = {
    "timeout": Reason.call_timeout,
    "crash": Reason.worker_crash,
    "memory": Reason.memory_limit,
    "policy": Reason.policy_violation,
}
#: Serialises parsing across validation threads: CPython 3.11 can raise "AST constructor
#: recursion depth mismatch" when threads parse concurrently (python/cpython#106905). The
#: static stage and every spawn (the sandbox parses the source again) take it.
PARSE_LOCK = threading.Lock()

#: How many call-by-call replays must all be slow before a ``slow_call`` is reported.
SLOW_CALL_REPLAYS = 3

#: Reasons after which the worker is gone (every later call on its handles fails), or,
#: for ``time_budget_exceeded``, the whole validation must stop: no stage retries,
#: replays or shrinks past one of these.
FATAL = frozenset(_FATAL.values()) | {Reason.time_budget_exceeded}
#: Method -> reason code when environment code itself raised.
_RAISED = {
    "__init__": Reason.init_error,
    "spawn": Reason.init_error,
    "reset": Reason.reset_error,
    "step": Reason.step_exception,
    "solution": Reason.solution_invalid,
}


def _is_infrastructure_error(exc: BaseException) -> bool:
    """Errors that say nothing about the candidate (the sandbox itself is unavailable)."""
    return isinstance(exc, SandboxUnavailable)


def classify_error(exc: BaseException, method: str) -> tuple[Reason, bool]:
    """Reason code of an exception raised by a runner call, and whether the worker died."""
    if isinstance(exc, SandboxError) and exc.worker_fatal and exc.kind in _FATAL:
        return _FATAL[exc.kind], True
    if isinstance(exc, EnvContractError):  # the sandbox's EnvContractViolation included
        return _contract_reason(str(exc), method), False
    return _RAISED.get(method, Reason.step_exception), False


def _contract_reason(message: str, method: str) -> Reason:
    text = message.lower()
    if method == "solution":
        return Reason.solution_invalid
    words = set(text.replace(",", " ").split())
    if "non-finite" in text or words & {"nan", "inf", "-inf"}:
        return Reason.non_finite_reward
    if "outside" in text and "range" in text:
        return Reason.reward_out_of_range
    if "characters" in text and "limit" in text:
        return Reason.observation_too_large
    if method == "reset":
        return Reason.reset_wrong_types
    return Reason.step_wrong_types


def describe_error(exc: BaseException) -> str:
    """One line: the error, and where in the environment's code it happened."""
    message = getattr(exc, "message", None) or str(exc)
    text = f"{type(exc).__name__}: {message}"
    tb = getattr(exc, "env_traceback", None)
    if tb:
        frames = [line.strip() for line in str(tb).splitlines() if line.strip().startswith('File "<env>"')]
        if frames:
            where = frames[-1].removeprefix('File "<env>", ')
            text += f" (at {where})"
    return text


@dataclass(frozen=True)
class Bounds:
    """The invariants every value returned by an environment must satisfy."""

    reward_range: tuple[float, float]
    max_observation_chars: int
    call_time_bound_s: float


@dataclass(slots=True)
class Step:
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    seconds: float

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass
class Instance:
    """One environment instance living in a runner, with checked calls.

    After a fatal error (timeout, crash, memory) the handle is gone: :attr:`alive` turns
    false and the next call respawns transparently.
    """

    runner: EnvRunner
    source: str
    bounds: Bounds
    allowed_modules: tuple[str, ...] = ()
    class_name: str | None = None
    handle: Any = None
    alive: bool = False
    #: Actions sent since the last reset: the replayable prefix of any failure.
    trail: list[str] = field(default_factory=list)
    seed: int | None = None
    #: Whether a call slower than ``bounds.call_time_bound_s`` raises ``slow_call``.
    enforce_time_bound: bool = False
    #: ``time.monotonic()`` after which no call is sent: the candidate's whole validation
    #: budget is spent (``time_budget_exceeded``); ``None``: no budget.
    deadline: float | None = None
    budget_s: float | None = None

    def check_budget(self) -> None:
        """Raise ``time_budget_exceeded`` once the validation's total budget is spent."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise Rejection(
                Reason.time_budget_exceeded,
                f"the validation of this candidate used its whole time budget of {self.budget_s:g} s "
                "(validation.candidate_budget_s); its calls are too slow to judge it",
                seed=self.seed,
                details={"budget_s": self.budget_s, "actions_sent": len(self.trail)},
            )

    def spawn(self) -> None:
        if self.alive:
            return
        try:
            with PARSE_LOCK:
                self.handle = self.runner.spawn(self.source, allowed_modules=self.allowed_modules, class_name=self.class_name)
        except Exception as exc:
            self._fail(exc, "spawn")
        self.alive = True

    def close(self) -> None:
        if self.alive and self.handle is not None:
            try:
                self.runner.close_env(self.handle)
            except Exception:  # closing a broken worker must not mask the real finding
                pass
        self.alive = False
        self.handle = None

    def _fail(self, exc: BaseException, method: str) -> None:
        if _is_infrastructure_error(exc) or isinstance(exc, Rejection):
            raise exc
        code, fatal = classify_error(exc, method)
        if fatal:
            self.alive = False
            self.handle = None
        where = f"{method}()" if method != "spawn" else "instantiating the class"
        raise Rejection(
            code,
            f"{where} failed: {describe_error(exc)}",
            actions=list(self.trail) if method == "step" else None,
            seed=self.seed if method in ("reset", "step") else None,
            details={"method": method},
        ) from exc

    def _timed(self, method: str, fn: Any, *args: Any) -> tuple[Any, float]:
        self.check_budget()
        self.spawn()
        t0 = time.perf_counter()
        try:
            out = fn(self.handle, *args)
        except Exception as exc:
            self._fail(exc, method)
        return out, time.perf_counter() - t0

    def _slow(self, method: str, seconds: float) -> None:
        # Only the fuzz stage judges the time bound, and it confirms by replaying: a busy
        # machine must not turn one late answer into a rejection anywhere else.
        if not self.enforce_time_bound:
            return
        if seconds > self.bounds.call_time_bound_s:
            raise Rejection(
                Reason.slow_call,
                f"{method}() took {seconds * 1000:.0f} ms (bound {self.bounds.call_time_bound_s * 1000:.0f} ms)",
                actions=list(self.trail) if method == "step" else None,
                seed=self.seed,
                details={"method": method, "seconds": round(seconds, 4)},
            )

    def _contract_error(self, method: str, details: dict[str, Any] | None = None) -> contract.ErrorClass:
        """The ``error`` of a contract check called on a value of ``method``: a
        :class:`Rejection` whose reason code the contract's message tells (as
        :func:`classify_error` reads a violation the sandbox raised), with the replayable
        actions of a step and the seed of a reset or step."""

        def error(message: str, *, method: str = method) -> Rejection:
            return Rejection(
                _contract_reason(message, method),
                message,
                actions=list(self.trail) if method == "step" else None,
                seed=self.seed if method in ("reset", "step") else None,
                details=details,
            )

        return error

    def _observation(self, obs: Any, method: str) -> str:
        details = {"chars": str.__len__(obs)} if isinstance(obs, str) else None
        return contract.observation(obs, method, self._contract_error(method, details), self.bounds.max_observation_chars)

    def reset(self, seed: int | None) -> tuple[str, dict[str, Any]]:
        """Reset to ``seed``; returns ``(observation, info)`` or raises :class:`Rejection`."""
        self.trail = []
        self.seed = seed
        out, seconds = self._timed("reset", self.runner.reset, seed)
        error = self._contract_error("reset")
        obs, info = contract.reset_pair(out, error)
        obs = self._observation(obs, "reset")
        info = contract.info(info, "reset", error)
        self._slow("reset", seconds)
        return obs, dict(info)

    def step(self, action: str) -> Step:
        """One checked step: types, finite reward in range, size and time bounds."""
        self.trail.append(action)
        out, seconds = self._timed("step", self.runner.step, action)
        return self._check_step(out, seconds, timed=True)

    def play(self, seed: int | None, actions: list[str]) -> list[Step]:
        """``reset(seed)`` then ``actions`` in order, stopping at the end of the episode.

        When the runner batches (``step_many``), the whole list goes to the worker in one
        message; what the environment does after its episode ended is ignored. Every value
        the batch returned is judged first, whatever the batch's timing: a value does not
        depend on how busy the machine is. Per-call time bounds and fatal errors cannot be
        attributed within a batch: a batch slower than one call's bound (when the time
        bound is enforced), or one that killed the worker, is then replayed call by call
        (:meth:`_replay`), which locates the call or shows it came after the episode ended.
        """
        self.reset(seed)
        many = getattr(self.runner, "step_many", None)
        if many is None or len(actions) < 2:
            return self._play_sequential(actions)
        self.check_budget()
        t0 = time.perf_counter()
        try:
            results = many([(self.handle, a) for a in actions])
        except Exception as exc:
            self._fail(exc, "step")
        seconds = time.perf_counter() - t0
        per_call = seconds / len(actions)
        fatal_at = next(
            (i for i, out in enumerate(results) if isinstance(out, BaseException) and classify_error(out, "step")[1]),
            None,
        )
        if fatal_at is not None:  # the worker is gone, whatever the values before say
            self.alive = False
            self.handle = None
        steps: list[Step] = []
        for i, (action, out) in enumerate(zip(actions, results, strict=True)):
            if i == fatal_at:
                # The batch shares one deadline and one fate: which call hung or killed
                # the worker only a call-by-call replay tells.
                return self._replay(seed, actions)
            self.trail.append(action)
            if isinstance(out, BaseException):
                self._fail(out, "step")
            step = self._check_step(out, per_call, timed=False)
            steps.append(step)
            if step.done:
                if i + 1 < len(results):
                    self.judge_after_end(results[i + 1], actions[: i + 2], step)
                break
        if self.enforce_time_bound and seconds > self.bounds.call_time_bound_s:
            self._replay(seed, actions[: len(steps)])
        return steps

    def judge_after_end(self, out: Any, actions: list[str], last: Step) -> None:
        """The contract's rule for a step after the end (``spade_core.env.TextEnv``): the
        answer to ``actions[-1]``, sent after the episode ended, must neither pay (a reward
        above zero and above the range's floor) nor say the episode goes on. Raising is a
        fine answer; a value that breaks the contract otherwise is not judged here (no
        consumer of SPADE ever sends this step)."""
        if isinstance(out, BaseException) or type(out) is not tuple or len(out) != 5:
            return
        _obs, reward, terminated, truncated, _info = out
        if not isinstance(reward, int | float) or isinstance(reward, bool):
            return
        floor = max(0.0, self.bounds.reward_range[0])
        how = "ended (terminated)" if last.terminated else "was cut (truncated)"
        if reward > floor + 1e-9:
            problem = f"paid {reward} again"
        elif not (bool(terminated) or bool(truncated)):
            problem = "answered with terminated and truncated both false: the episode went on"
        else:
            return
        raise Rejection(
            Reason.step_after_end,
            f"after the episode {how} at step {len(actions) - 1}, a further step {problem}; a step after the end "
            "must pay nothing and keep the episode over (or raise)",
            actions=list(actions),
            seed=self.seed,
            details={"step": len(actions), "reward": reward, "terminated": bool(terminated), "truncated": bool(truncated)},
        )

    def after_end(self, actions: list[str], last: Step) -> None:
        """Send ``actions`` one by one after the episode ended (``last`` was its final
        step) and judge each answer (:meth:`judge_after_end`); the trail says where."""
        for action in actions:
            self.trail.append(action)
            self.check_budget()
            try:
                out = self.runner.step(self.handle, action)
            except Exception as exc:
                if classify_error(exc, "step")[1]:  # the worker died: it is gone either way
                    self.alive = False
                    self.handle = None
                    return
                continue  # raising is a fine answer to a step after the end
            self.judge_after_end(out, list(self.trail), last)

    def _replay(self, seed: int | None, actions: list[str]) -> list[Step]:
        """Replay an episode call by call, with every call timed on its own.

        A ``slow_call`` counts only when every one of :data:`SLOW_CALL_REPLAYS` replays
        raises it (the machine may just have been busy); a replay that finishes within the
        bounds wins, so a late answer never hides what else the replay checks. Any other
        rejection is raised as soon as a replay meets it.
        """
        slow: Rejection | None = None
        for _ in range(SLOW_CALL_REPLAYS):
            self.reset(seed)
            try:
                return self._play_sequential(actions)
            except Rejection as rej:
                if rej.code is not Reason.slow_call:
                    raise
                slow = rej
        assert slow is not None
        slow.details["replays"] = SLOW_CALL_REPLAYS
        raise slow

    def _play_sequential(self, actions: list[str]) -> list[Step]:
        steps = []
        for action in actions:
            step = self.step(action)
            steps.append(step)
            if step.done:
                break
        return steps

    def _check_step(self, out: Any, seconds: float, *, timed: bool) -> Step:
        # The common case first, with exact type tests (a NaN fails the range test and a
        # bool reward is not a float): every value of it is valid as it stands.
        if type(out) is tuple and len(out) == 5:
            obs, reward, terminated, truncated, info = out
            lo, hi = self.bounds.reward_range
            if (
                type(obs) is str
                and len(obs) <= self.bounds.max_observation_chars
                and type(reward) is float
                and lo - 1e-9 <= reward <= hi + 1e-9
                and type(terminated) is bool
                and type(truncated) is bool
                and type(info) is dict
            ):
                if timed:
                    self._slow("step", seconds)
                return Step(obs, reward, terminated, truncated, dict(info), seconds)
        return self._check_step_values(out, seconds, timed=timed)

    def _check_step_values(self, out: Any, seconds: float, *, timed: bool) -> Step:
        error = self._contract_error("step")
        obs, reward, terminated, truncated, info = contract.step_tuple(out, error)
        obs = self._observation(obs, "step")
        r = contract.reward(reward, error)
        r = contract.reward_in_range(r, self.bounds.reward_range, self._contract_error("step", {"reward": r}))
        terminated = contract.flag(terminated, "terminated", error)
        truncated = contract.flag(truncated, "truncated", error)
        info = contract.info(info, "step", error)
        if timed:
            self._slow("step", seconds)
        return Step(obs, r, terminated, truncated, dict(info), seconds)

    def tool_schemas(self) -> list[Any] | None:
        """``get_tool_schemas()`` (after ``reset``: the reference base fills its tools
        there); ``None`` when the environment has none or they are not a list of dicts.
        Raises :class:`Rejection` as any call does (the caller decides what is fatal)."""
        try:
            out, _ = self._timed("get_tool_schemas", self.runner.call, "get_tool_schemas")
        except Rejection as rej:
            cause = rej.__cause__
            if type(cause).__name__ == "EnvMethodMissing" or getattr(cause, "kind", None) == "missing_method":
                return None
            raise
        try:
            return contract.tool_schemas(out, EnvContractError) or None
        except EnvContractError:
            return None

    def solution(self) -> list[str] | str | None:
        """``solution()`` as a list of actions or a string; ``None`` when not provided."""
        try:
            out, _ = self._timed("solution", self.runner.call, "solution")
        except Rejection as rej:
            cause = rej.__cause__
            if type(cause).__name__ == "EnvMethodMissing" or getattr(cause, "kind", None) == "missing_method":
                return None
            if "NotImplementedError" in rej.message:  # the TextEnv default: "does not provide solution()"
                return None
            raise
        if out is None:
            return None
        return contract.solution(out, self._contract_error("solution"))

