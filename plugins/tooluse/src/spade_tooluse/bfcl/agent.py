"""An agent function played on the suite, entry by entry (no LLM backend needed).

``spade eval --suite bfcl`` (:mod:`.suite`) is the batched, concurrent way to measure a
policy; this is the plain loop for an agent written as a Python function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .env import BfclEnv
from .loader import CATEGORIES, BfclEntry, load_entries
from .selfcheck import run_suite

#: An agent: the chat so far (``{"role", "content"}`` dicts; the environment speaks as
#: ``user``) -> its next message.
Agent = Callable[[list[dict[str, str]]], str]


@dataclass
class AgentReport:
    """An agent's accuracy on the suite (the benchmark's figure: entries fully valid)."""

    entries: int = 0
    valid: int = 0
    mean_reward: float = 0.0
    per_category: dict[str, list[int]] = field(default_factory=dict)  # category -> [valid, total]
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.valid / self.entries if self.entries else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"entries": self.entries, "valid": self.valid, "accuracy": self.accuracy,
                "mean_reward": self.mean_reward, "per_category": self.per_category, "results": self.results}


def play_entry(entry: BfclEntry, agent: Agent, *, max_messages: int = 200) -> dict[str, Any]:
    """One episode of ``agent`` on ``entry``; the final reward and verdict.

    ``max_messages`` bounds the agent's messages over the whole episode (the per-turn
    limit of the benchmark applies as well).
    """
    env = BfclEnv(entry)
    obs, _ = env.reset()
    chat = [{"role": "user", "content": obs}]
    reward, info, messages = 0.0, {"bfcl_valid": False}, 0
    while messages < max_messages:
        action = agent([dict(m) for m in chat])
        messages += 1
        obs, reward, terminated, truncated, info = env.step(action if isinstance(action, str) else str(action))
        chat += [{"role": "assistant", "content": str(action)}, {"role": "user", "content": obs}]
        if terminated or truncated:
            break
    env.close()
    return {"entry": entry.id, "category": entry.category, "reward": reward, "valid": bool(info.get("bfcl_valid")),
            "messages": messages}


def evaluate_agent(
    agent: Agent,
    categories: Sequence[str] = CATEGORIES,
    *,
    limit: int | None = None,
    progress: bool = False,
) -> AgentReport:
    """Play ``agent`` on every entry of ``categories`` (the first ``limit`` of each)."""
    entries = [e for c in categories for e in load_entries([c])[:limit]]
    report = AgentReport(entries=len(entries))
    total_reward = 0.0
    bar: Any = None
    if progress:
        from rich.progress import Progress

        bar = Progress(transient=True)
        bar.start()
        task = bar.add_task("agent on BFCL-v4 multi-turn", total=len(entries))
    try:
        for entry in entries:
            r = play_entry(entry, agent)
            report.results.append(r)
            total_reward += r["reward"]
            stats = report.per_category.setdefault(entry.category, [0, 0])
            stats[1] += 1
            if r["valid"]:
                report.valid += 1
                stats[0] += 1
            if bar is not None:
                bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    report.mean_reward = total_reward / len(entries) if entries else 0.0
    return report


def suite_for_plugin(*, agent: Agent | None = None, **options: Any) -> dict[str, Any]:
    """The ``bfcl_v4_multi_turn`` domain suite entry point (JSON result).

    With ``agent``, the agent's accuracy (:func:`evaluate_agent`; options ``categories``,
    ``limit``); without, the suite's self-check (:func:`~.selfcheck.run_suite`: ground-truth
    replay and agreement with the official checker; options ``categories``, ``mutations``,
    ``seed``).
    """
    if agent is not None:
        return evaluate_agent(agent, **options).to_dict()
    return run_suite(**options).to_dict()
