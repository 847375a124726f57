"""The evaluation harness: a policy plays a suite's episodes, batched and concurrent.

It lives in the core, beside the suite contract (:mod:`spade_core.evaluation`), so that
both ``spade eval`` (spade-eval) and the evaluation a self-play run makes every N
iterations (spade-trainer) play suites with the same code; neither package may import
the other. The policy is any ``LLMBackend`` (``chat(conversations, max_new_tokens=,
temperature=, seed=)`` returning completions with ``.text``).

Up to ``concurrency`` episodes are in flight. Each round, the policy answers the pending
turn of every one of them in one ``chat`` call (the backend batches or sends them in
parallel), and the environments are stepped on a thread pool (sandboxed ones each in
their own worker), so neither generation nor stepping waits on the other episode by
episode. A finished episode's place is taken by the next item.

An episode's return follows the reference recipe: the last step's reward, clipped to
[-1, 1], if the episode terminated, else 0 (cut off by its turn limit, or failed). A
success is a return of 1. An environment that fails (raises, hangs, breaks its contract)
ends its episode with the error recorded and return 0; it is counted in ``errors`` and
never stops the evaluation. An answer the environment could not check (its checker ran out
of time or memory, the number given is not finite) is the reply's failure, not the
environment's: scored as the environment scored it, with the reason in the episode's
``scoring_error``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spade_core.evaluation import EvalItem
from spade_core.returns import episode_return, is_win

#: A run folder's evaluation results, one JSON object a line (``spade compare`` reads them).
EVALS_FILE = "evals.jsonl"

SYSTEM_PROMPT = (
    "You act in a text environment. Each turn, read the observation and reply with one action in the "
    "format the observation asks for (for example \\boxed{...}). Keep your reply short."
)
#: z of a two-sided 95% interval
Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a success rate (``(0, 1)`` for no trials)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at 0 or n successes the bound is exactly 0 or 1 (the formula leaves rounding noise)
    lo = 0.0 if successes <= 0 else max(0.0, centre - half)
    hi = 1.0 if successes >= n else min(1.0, centre + half)
    return lo, hi


@dataclass
class EpisodeResult:
    label: str
    group: str
    seed: int
    episode_return: float
    turns: int
    success: bool
    terminated: bool
    error: str | None = None
    #: Why the answer could not be checked, when the environment says so (its last step's
    #: ``info["scoring_error"]``: a checker that ran out of time or memory, a number that is
    #: not finite); the episode is scored as the environment scored it (0 for these).
    scoring_error: str | None = None


@dataclass
class GroupStats:
    """Success rate (with its Wilson 95% interval), mean return (normal 95% interval) and
    mean turns of a set of episodes."""

    n: int
    successes: int
    success_rate: float
    success_ci: tuple[float, float]
    mean_return: float
    return_ci: tuple[float, float]
    mean_turns: float
    errors: int

    @classmethod
    def of(cls, episodes: Sequence[EpisodeResult]) -> GroupStats:
        n = len(episodes)
        wins = sum(e.success for e in episodes)
        returns = [e.episode_return for e in episodes]
        mean = sum(returns) / n if n else 0.0
        if n > 1:
            sd = math.sqrt(sum((r - mean) ** 2 for r in returns) / (n - 1))
            half = Z95 * sd / math.sqrt(n)
        else:
            half = float("nan") if n == 0 else 0.0
        return cls(
            n=n, successes=wins, success_rate=wins / n if n else 0.0, success_ci=wilson(wins, n),
            mean_return=mean, return_ci=(mean - half, mean + half),
            mean_turns=sum(e.turns for e in episodes) / n if n else 0.0,
            errors=sum(e.error is not None for e in episodes),
        )


@dataclass
class ColumnStats:
    """One summary column: the mean success rate of its groups (tasks), each weighing the
    same. A group whose every episode failed before its first turn (its environment could
    not be built) is *unavailable*: named here and left out of the mean, never scored 0
    silently nor dropped without a word."""

    success_rate: float
    tasks: int
    scored: int
    episodes: int
    unavailable: list[str]
    #: Normal 95% interval of the mean over the scored groups (over problems, for Avg@k);
    #: ``(0, 1)`` with fewer than two.
    interval: tuple[float, float] = (0.0, 1.0)


def column_stats(groups: dict[str, list[EpisodeResult]], column_of: dict[str, str]) -> dict[str, ColumnStats]:
    """Each column's :class:`ColumnStats` from its groups' episodes (``column_of``: group
    to column, for the groups that have one)."""
    members: dict[str, list[str]] = {}
    for group, column in column_of.items():
        members.setdefault(column, []).append(group)
    out = {}
    for column, names in members.items():
        names = sorted(names)
        unavailable = [g for g in names if all(e.error is not None and e.turns == 0 for e in groups.get(g, []))]
        scored = [g for g in names if g not in unavailable]
        rates = [sum(e.success for e in groups[g]) / len(groups[g]) for g in scored]
        mean = sum(rates) / len(rates) if rates else 0.0
        half = Z95 * math.sqrt(sum((r - mean) ** 2 for r in rates) / (len(rates) - 1) / len(rates)) if len(rates) > 1 else 0.0
        out[column] = ColumnStats(success_rate=mean, tasks=len(names), scored=len(scored),
                                  episodes=sum(len(groups.get(g, [])) for g in names), unavailable=unavailable,
                                  interval=(max(0.0, mean - half), min(1.0, mean + half)) if len(rates) > 1 else (0.0, 1.0))
    return out


@dataclass
class EvalResult:
    suite: str
    policy: str
    snapshot: str
    size: int
    seed: int
    overall: GroupStats
    groups: dict[str, GroupStats]
    episodes: list[EpisodeResult]
    wall_s: float
    env_steps: int
    generate_s: float
    env_s: float
    options: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    #: set by callers that know it (``spade eval --run``: the run's iteration)
    iteration: int | None = None
    #: The suite's summary columns (items with a ``column``), see :func:`column_stats`.
    columns: dict[str, ColumnStats] = field(default_factory=dict)
    #: The cap on turns per episode the caller set (``None``: each item's own).
    max_turns: int | None = None

    @property
    def episodes_per_s(self) -> float:
        return len(self.episodes) / self.wall_s if self.wall_s > 0 else 0.0

    def to_json(self, *, with_episodes: bool = True) -> dict[str, Any]:
        out = asdict(self)
        out["episodes_per_s"] = self.episodes_per_s
        if not with_episodes:
            out.pop("episodes")
        return out


class _Live:
    """One episode in flight."""

    def __init__(self, item: EvalItem) -> None:
        self.item = item
        self.env: Any = None
        self.messages: list[dict[str, str]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.turns = 0
        self.reward = 0.0
        self.terminated = False
        self.done = False
        self.error: str | None = None
        self.scoring_error: str | None = None

    def start(self) -> None:
        try:
            self.env = self.item.make_env()
            obs, _ = self.env.reset(seed=self.item.seed)
            self.messages.append({"role": "user", "content": str(obs)})
        except Exception as exc:  # the environment's fault: recorded, the evaluation goes on
            self._fail(exc)

    def act(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})
        try:
            obs, reward, terminated, truncated, info = self.env.step(text)
        except Exception as exc:
            self._fail(exc)
            return
        self.turns += 1
        why = info.get("scoring_error") if isinstance(info, dict) else None  # the last step's, as its reward
        self.scoring_error = str(why)[:500] if why else None
        self.reward = float(reward)
        self.terminated = bool(terminated)
        if terminated or truncated or self.turns >= self.item.max_turns:
            self.finish()
        else:
            self.messages.append({"role": "user", "content": str(obs)})

    def _fail(self, exc: BaseException) -> None:
        self.error = f"{type(exc).__name__}: {exc}"[:500]
        self.terminated = False
        self.finish()

    def finish(self) -> None:
        self.done = True
        if self.env is not None:
            try:
                self.env.close()
            except Exception:  # closing a failed environment must not fail the evaluation
                pass

    def result(self) -> EpisodeResult:
        try:  # the rule every part applies; a failed episode ends unterminated (return 0)
            ret = episode_return(self.reward, self.terminated)
        except ValueError:  # a non-finite reward scores nothing
            ret = 0.0
        return EpisodeResult(self.item.label, self.item.group, self.item.seed, ret, self.turns,
                             is_win(ret), self.terminated, self.error, self.scoring_error)


def evaluate(
    backend: Any,
    items: Sequence[EvalItem],
    *,
    suite: str = "",
    policy: str = "",
    snapshot: str = "",
    size: int = 0,
    seed: int = 0,
    concurrency: int = 16,
    max_new_tokens: int = 256,
    temperature: float = 0.0,
    options: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_turns: int | None = None,
) -> EvalResult:
    """Play every item with ``backend`` (an ``LLMBackend``) and aggregate the results;
    ``max_turns`` caps every item's turns (an item that declares fewer keeps its own)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if max_turns is not None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        items = [dataclasses.replace(i, max_turns=min(i.max_turns, max_turns)) for i in items]
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    queue = list(items)
    queue.reverse()
    live: list[_Live] = []
    finished: list[EpisodeResult] = []
    generate_s = env_s = 0.0
    steps = 0
    report = progress or (lambda done, total: None)
    total = len(queue)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="spade-eval-env") as pool:
        while queue or live:
            fresh = []
            while queue and len(live) + len(fresh) < concurrency:
                fresh.append(_Live(queue.pop()))
            if fresh:
                e0 = time.perf_counter()
                list(pool.map(_Live.start, fresh))
                env_s += time.perf_counter() - e0
                live.extend(fresh)
            for ep in [e for e in live if e.done]:
                finished.append(ep.result())
            live = [e for e in live if not e.done]
            if not live:
                report(len(finished), total)
                continue
            g0 = time.perf_counter()
            sampling = {"max_new_tokens": max_new_tokens, "temperature": temperature,
                        "seed": seed + len(finished) + steps if temperature > 0 else None}
            completions = _chat(backend, live, sampling)
            generate_s += time.perf_counter() - g0
            e0 = time.perf_counter()
            list(pool.map(lambda pair: pair[0].act(pair[1].text),
                          [(e, c) for e, c in zip(live, completions, strict=True) if c is not None]))
            env_s += time.perf_counter() - e0
            steps += sum(c is not None for c in completions)
            for ep in [e for e in live if e.done]:
                finished.append(ep.result())
            live = [e for e in live if not e.done]
            report(len(finished), total)
    groups: dict[str, list[EpisodeResult]] = {}
    for ep in finished:
        groups.setdefault(ep.group, []).append(ep)
    column_of = {item.group: item.column for item in items if item.column}
    return EvalResult(
        suite=suite, policy=policy, snapshot=snapshot, size=size, seed=seed,
        overall=GroupStats.of(finished), groups={g: GroupStats.of(eps) for g, eps in sorted(groups.items())},
        episodes=finished, wall_s=time.perf_counter() - t0, env_steps=steps, generate_s=generate_s, env_s=env_s,
        options=dict(options or {}), started_at=started, columns=column_stats(groups, column_of), max_turns=max_turns,
    )


def _chat(backend: Any, live: list[_Live], sampling: dict[str, Any]) -> list[Any]:
    """One completion per live episode. When the model server refuses one request for
    what it holds (an error marked ``request_rejected``: a conversation over its context,
    say), the batch is asked again one conversation at a time, and each refused episode
    ends with the server's answer as its error (``None`` in its place); any other error
    stops the evaluation."""
    try:
        return list(backend.chat([e.messages for e in live], **sampling))
    except Exception as exc:
        if not getattr(exc, "request_rejected", False):
            raise
    out: list[Any] = []
    for ep in live:
        try:
            out.append(backend.chat([ep.messages], **sampling)[0])
        except Exception as exc:
            if not getattr(exc, "request_rejected", False):
                raise
            ep._fail(exc)
            out.append(None)
    return out


def append_to_run(result: EvalResult, run: Path, **extra: Any) -> Path:
    """Append ``result`` (without its per-episode rows) to ``run/evals.jsonl``; ``extra``
    keys (what the run had done when it was measured) join the line."""
    record = {**result.to_json(with_episodes=False), **extra}
    run.mkdir(parents=True, exist_ok=True)
    path = run / EVALS_FILE
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
    return path
