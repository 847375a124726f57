"""The rollout engine: many multi-turn episodes stepped together.

Each turn, one batched generation covers every live episode and one batched sandbox call
(``step_many``) steps them all; per-item sandbox errors end only their own episode. A step
that hangs past the sandbox deadline ends its episode with the hang penalty; it never
stalls the batch (the sandbox kills the worker and answers for it).

Trajectories are token ids: ``prompt_ids`` (the first prompt) then ``completion_ids``
(model turns and environment turns interleaved), with ``env_mask`` 1 on model tokens and
0 on environment tokens, and the sampling logprob of each model token (0 on environment
tokens) — the multi-turn shape TRL's ``rollout_func`` returns.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from spade_core.metadata import ActionFormat

from .actions import ACTION_INSTRUCTIONS, action_end, extract_action
from .chat import ChatFormat
from .errors import RolloutError
from .policy import Generation, ReplyEnd, Sampling, TokenPolicy, accepts_stop
from .rewards import HUNG_STEP_PENALTY, episode_return
from .shaping_signals import well_formed_action


@dataclass(frozen=True)
class PlayableEnv:
    """An environment the agent can play: its source and how to run and talk to it."""

    env_id: str
    source: str
    domain: str
    skill: str = ""
    action_format: ActionFormat = ActionFormat.boxed
    allowed_modules: frozenset[str] = frozenset()
    class_name: str | None = None
    max_turns: int = 25
    hint: str | None = None


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to play: which environment, with or without its hint, from which seed."""

    env: PlayableEnv
    hinted: bool
    seed: int

    def __post_init__(self) -> None:
        if self.hinted and not self.env.hint:
            raise RolloutError(f"hinted episode requested for {self.env.env_id!r}, which has no hint")


@dataclass
class Episode:
    """A finished (or in-progress) episode and its token trajectory."""

    spec: EpisodeSpec
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    turns: int = 0
    #: Turns whose message carried an action in the domain's format (shaping, not return).
    well_formed_turns: int = 0
    terminated: bool = False
    truncated: bool = False
    hung: bool = False
    error: str | None = None
    done: bool = False

    @property
    def model_tokens(self) -> int:
        return sum(self.env_mask)

    @property
    def usable(self) -> bool:
        """False when the environment failed or hung: the play says nothing about the agent
        (left out of regret and win rate, not trained on)."""
        return self.error is None and not self.hung

    @property
    def episode_return(self) -> float:
        """REFERENCE.md's return; a hung play records the pure-regret variant's hang
        penalty here, but no usable mean or training reward ever reads it."""
        last = self.rewards[-1] if self.rewards else None
        return episode_return(last, self.terminated, hung=self.hung, hang_penalty=HUNG_STEP_PENALTY)


class EnvBackend(Protocol):
    """What the engine needs from a pool of running environments (``SandboxPool`` fits)."""

    def spawn(self, source: str, *, allowed_modules: Any = (), class_name: str | None = None) -> Any: ...

    def reset_many(self, items: Sequence[tuple[Any, int | None]]) -> list[Any]: ...

    def step_many(self, items: Sequence[tuple[Any, str]]) -> list[Any]: ...

    def call(self, handle: Any, method: str) -> Any: ...

    def close_env(self, handle: Any) -> None: ...


@dataclass(frozen=True)
class TokenBudget:
    """Per-turn and per-episode limits on tokens."""

    per_turn: int = 256
    #: Model + environment tokens after the first prompt.
    per_episode: int = 4096

    def __post_init__(self) -> None:
        if self.per_turn < 1 or self.per_episode < 1:
            raise RolloutError(f"token budgets must be >= 1, got per_turn={self.per_turn}, per_episode={self.per_episode}")


@dataclass(frozen=True)
class ReplyShape:
    r"""How the agent's replies are shaped.

    ``prefill``: text the reply starts with, given to the model instead of sampled (say
    ``\boxed{`` so that a small model acts at once); its tokens are the environment's
    (``env_mask`` 0, never trained) and it is part of the message the action is read from.
    ``cut_at_action``: a reply ends where its first complete action does (the closing brace
    of ``\boxed{...}``, ``</answer>``); what a model writes after it is neither sent nor
    trained, and sampling stops there when the policy can stop early.
    """

    prefill: str = ""
    cut_at_action: bool = False


def is_hang(error: BaseException) -> bool:
    """True for a sandbox deadline (the worker hung), which costs the hang penalty."""
    if isinstance(error, TimeoutError):
        return True
    try:
        from spade_sandbox.errors import SandboxTimeout  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - sandbox not installed
        SandboxTimeout = ()
    return isinstance(error, SandboxTimeout) or getattr(error, "kind", None) == "timeout"


def play_seed(seed: int, spec: EpisodeSpec, turn: int) -> int:
    """The sampling seed of one request: a stable function of the rollout's seed, the
    environment, the play (its reset seed and hint condition) and the turn, so the K plays
    of one environment sample apart (under vLLM's per-request seeding identical prompts with
    one seed would sample identically) and a rerun samples the same."""
    key = f"{seed}/{spec.env.env_id}/{spec.seed}/{int(spec.hinted)}/{turn}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") >> 33  # < 2**31


def first_observation(obs: str, spec: EpisodeSpec, tools: list[dict[str, Any]] | None = None) -> str:
    """The first user message: the observation, tool schemas when any, and the hint when hinted."""
    text = obs
    if tools:
        text += "\n\nAvailable tools:\n" + json.dumps(tools, ensure_ascii=False)
    if spec.hinted:
        text += f"\n\nHint: {spec.env.hint}"
    return text


@dataclass
class RolloutStats:
    """Timing of one :meth:`RolloutEngine.run` call, split by who spent it."""

    episodes: int = 0
    turns: int = 0
    generate_s: float = 0.0
    env_s: float = 0.0
    total_s: float = 0.0

    @property
    def engine_s(self) -> float:
        """Time spent in the engine's own code (neither generation nor environments)."""
        return max(0.0, self.total_s - self.generate_s - self.env_s)


class RolloutEngine:
    """Plays batches of episodes of one policy against environments of one backend."""

    def __init__(
        self,
        backend: EnvBackend,
        policy: TokenPolicy,
        tokenizer: Any,
        *,
        budget: TokenBudget | None = None,
        sampling: Sampling | None = None,
        system_prompt: str = "You are an agent acting in a text environment.",
        reply: ReplyShape | None = None,
    ) -> None:
        self.backend = backend
        self.policy = policy
        self.budget = budget or TokenBudget()
        self.sampling = sampling or Sampling()
        self.reply = reply or ReplyShape()
        self._formats: dict[ActionFormat, ChatFormat] = {
            fmt: ChatFormat(tokenizer, f"{system_prompt} {ACTION_INSTRUCTIONS[fmt]}".strip()) for fmt in ActionFormat
        }
        self._tokenizer = tokenizer
        self._prefill_ids: list[int] = (
            list(tokenizer(self.reply.prefill, add_special_tokens=False)["input_ids"]) if self.reply.prefill else []
        )
        self._policy_stops = accepts_stop(policy)
        self.last_stats = RolloutStats()

    def chat_format(self, action_format: ActionFormat) -> ChatFormat:
        return self._formats[ActionFormat(action_format)]

    def run(self, specs: Sequence[EpisodeSpec], *, seed: int = 0) -> list[Episode]:
        """Play every episode to its end; results in the order of ``specs``."""
        stats = RolloutStats(episodes=len(specs))
        t_start = time.perf_counter()
        episodes = [Episode(spec=s) for s in specs]
        handles: list[Any] = [None] * len(episodes)
        try:
            t0 = time.perf_counter()
            for i, ep in enumerate(episodes):
                env = ep.spec.env
                try:
                    handles[i] = self.backend.spawn(
                        env.source, allowed_modules=env.allowed_modules, class_name=env.class_name
                    )
                except Exception as exc:  # a broken environment ends only its own episodes
                    self._fail(ep, exc)
            started = [i for i in range(len(episodes)) if not episodes[i].done]
            resets = self.backend.reset_many([(handles[i], episodes[i].spec.seed) for i in started]) if started else []
            stats.env_s += time.perf_counter() - t0
            self._start(episodes, handles, started, resets)
            while True:
                live = [i for i, ep in enumerate(episodes) if not ep.done]
                if not live:
                    break
                self._turn(episodes, handles, live, seed, stats)
        finally:
            release = getattr(self.policy, "release", None)
            if release is not None:
                release()  # a policy's cache of these episodes' turns ends with them (weights change next)
            for h in handles:
                if h is not None:
                    try:
                        self.backend.close_env(h)
                    except Exception:
                        pass  # a worker that already died needs no closing
        stats.total_s = time.perf_counter() - t_start
        self.last_stats = stats
        return episodes

    def _fail(self, ep: Episode, exc: BaseException) -> None:
        ep.done = True
        if is_hang(exc):
            ep.hung = True
        ep.error = f"{type(exc).__name__}: {exc}"

    def _start(self, episodes: list[Episode], handles: list[Any], started: list[int], resets: list[Any]) -> None:
        by_format: dict[ActionFormat, list[tuple[int, str]]] = {}
        for i, res in zip(started, resets, strict=True):
            ep = episodes[i]
            if isinstance(res, BaseException):
                self._fail(ep, res)
                continue
            obs = res[0] if isinstance(res, tuple) else res
            tools = None
            if ep.spec.env.action_format is ActionFormat.tool_call:
                try:
                    tools = self.backend.call(handles[i], "get_tool_schemas")
                except Exception:
                    tools = None  # environments without schemas describe tools in the observation
            text = first_observation(str(obs), ep.spec, tools)
            ep.messages.extend(self._formats[ep.spec.env.action_format].messages(text))
            by_format.setdefault(ep.spec.env.action_format, []).append((i, text))
        for fmt, items in by_format.items():
            prompts = self._formats[fmt].first_prompts([t for _, t in items])
            for (i, _), ids in zip(items, prompts, strict=True):
                episodes[i].prompt_ids = ids + self._prefill_ids

    def reply_end(self, action_format: ActionFormat) -> ReplyEnd | None:
        """The :data:`ReplyEnd` of replies in ``action_format`` (``None`` when replies are not
        cut, or the format has no end marker): the fewest tokens whose text, after the
        prefill, holds a complete action."""
        fmt, prefill, tok = ActionFormat(action_format), self.reply.prefill, self._tokenizer
        if not self.reply.cut_at_action or fmt is ActionFormat.free_text:
            return None

        def ends(ids: Sequence[int]) -> int | None:
            ids = list(ids)
            if action_end(prefill + tok.decode(ids, skip_special_tokens=True), fmt) is None:
                return None
            lo, hi = 1, len(ids)  # a prefix holding a complete action still holds it when longer
            while lo < hi:
                mid = (lo + hi) // 2
                if action_end(prefill + tok.decode(ids[:mid], skip_special_tokens=True), fmt) is None:
                    lo = mid + 1
                else:
                    hi = mid
            return lo

        return ends

    def _cut(self, gen: Generation, stop: ReplyEnd | None) -> Generation:
        """``gen`` ending where its action does (see :class:`ReplyShape`)."""
        end = stop(gen.completion_ids) if stop is not None else None
        if end is None or end >= len(gen.completion_ids):
            return gen
        return Generation(gen.completion_ids[:end], gen.logprobs[:end], False)

    def _turn(
        self, episodes: list[Episode], handles: list[Any], live: list[int], seed: int, stats: RolloutStats
    ) -> None:
        t0 = time.perf_counter()
        formats = {episodes[i].spec.env.action_format for i in live}
        # one generate call per turn: a batch of one format stops early; mixed formats are cut after
        stop = self.reply_end(next(iter(formats))) if len(formats) == 1 else None
        extra: dict[str, Any] = {"stop": stop} if stop is not None and self._policy_stops else {}
        gens = self.policy.generate(
            [episodes[i].prompt_ids + episodes[i].completion_ids for i in live],
            max_new_tokens=self.budget.per_turn,
            sampling=self.sampling,
            seed=[play_seed(seed, episodes[i].spec, episodes[i].turns) for i in live],
            **extra,
        )
        stats.generate_s += time.perf_counter() - t0
        if len(gens) != len(live):
            raise RolloutError(f"policy returned {len(gens)} generations for {len(live)} prompts")
        if self.reply.cut_at_action:
            gens = [self._cut(g, self.reply_end(episodes[i].spec.env.action_format)) for i, g in zip(live, gens, strict=True)]
        texts = [self.reply.prefill + t for t in self._formats[ActionFormat.boxed].decode([g.completion_ids for g in gens])]
        actions = []
        for i, g, text in zip(live, gens, texts, strict=True):
            ep = episodes[i]
            if len(g.logprobs) != len(g.completion_ids):
                raise RolloutError("policy returned logprobs and token ids of different lengths")
            ep.completion_ids.extend(g.completion_ids)
            ep.env_mask.extend([1] * len(g.completion_ids))
            ep.logprobs.extend(g.logprobs)
            ep.messages.append({"role": "assistant", "content": text})
            actions.append(extract_action(text, ep.spec.env.action_format))
            ep.well_formed_turns += well_formed_action(text, ep.spec.env.action_format)
        t0 = time.perf_counter()
        results = self.backend.step_many([(handles[i], a) for i, a in zip(live, actions, strict=True)])
        stats.env_s += time.perf_counter() - t0
        stats.turns += len(live)
        follow: dict[ActionFormat, list[tuple[int, str, bool]]] = {}
        for i, g, res in zip(live, gens, results, strict=True):
            ep = episodes[i]
            ep.turns += 1
            if isinstance(res, BaseException):
                self._fail(ep, res)
                continue
            obs, reward, terminated, truncated = res[0], float(res[1]), bool(res[2]), bool(res[3])
            ep.rewards.append(reward)
            ep.terminated, ep.truncated = terminated, truncated
            if terminated or truncated or ep.turns >= ep.spec.env.max_turns:
                ep.truncated = ep.truncated or not terminated
                ep.done = True
                continue
            if len(ep.completion_ids) + self.budget.per_turn > self.budget.per_episode:
                ep.truncated = True  # the next turn could not fit the episode's token budget
                ep.done = True
                continue
            ep.messages.append({"role": "user", "content": str(obs)})
            follow.setdefault(ep.spec.env.action_format, []).append((i, str(obs), g.finished))
        for fmt, items in follow.items():
            tails = self._formats[fmt].turn_ids([o for _, o, _ in items], [f for _, _, f in items])
            for (i, _, _), ids in zip(items, tails, strict=True):
                ep = episodes[i]
                ids = ids + self._prefill_ids  # the next reply's prefill: not the model's tokens
                ep.completion_ids.extend(ids)
                ep.env_mask.extend([0] * len(ids))
                ep.logprobs.extend([0.0] * len(ids))
