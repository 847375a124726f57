"""Episodes as ATIF trajectories (Agent Trajectory Interchange Format, which Harbor records
runs in): a run's transcripts and a Harbor task's episode file (docs/harbor.md, "ATIF").

:func:`atif_trajectory` turns an episode (the prompt, then each action with the
environment's reply and reward) into ATIF; :func:`trajectory_from_transcript` and
:func:`trajectory_from_episode` read the two records SPADE keeps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._version import __version__
from ..actions import parse_tool_action
from ..errors import ActionFormatError, SpadeError
from ..returns import episode_return, is_win

#: The ATIF version written (every field used exists there).
ATIF_VERSION = "ATIF-v1.6"


class AtifError(SpadeError):
    """An episode that cannot be written as ATIF; the message says why."""


@dataclass(frozen=True)
class EpisodeTurn:
    """One action of an episode and what the environment answered."""

    action: str
    observation: str | None = None
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False


def atif_trajectory(
    *,
    session_id: str,
    prompts: Sequence[tuple[str, str]],
    turns: Sequence[EpisodeTurn],
    agent_name: str = "spade",
    model_name: str | None = None,
    result: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An episode as an ATIF trajectory (a JSON-ready dict).

    ``prompts`` are ``(role, text)`` before the first action (``system`` stays a system
    step, anything else is a ``user`` step: the environment's first observation); each
    turn is an ``agent`` step whose message is the action, whose observation is the
    environment's reply, and whose ``extra`` holds the reward and the end flags. An action's
    ``<tool_call>`` tags are the step's ``tool_calls`` too (the reply's ``source_call_id``
    names the call when there is one).
    ``result`` (the return, success...) goes to ``final_metrics.extra``."""
    steps: list[dict[str, Any]] = []
    for role, text in prompts:
        steps.append({"step_id": len(steps) + 1, "source": "system" if role == "system" else "user", "message": text})
    for turn in turns:
        step_id = len(steps) + 1
        step: dict[str, Any] = {"step_id": step_id, "source": "agent", "message": turn.action}
        calls = _tool_calls(turn.action, step_id)
        if calls:
            step["tool_calls"] = calls
        if turn.observation is not None:
            reply: dict[str, Any] = {"content": turn.observation}
            if len(calls) == 1:  # the environment's one reply answers that call
                reply["source_call_id"] = calls[0]["tool_call_id"]
            step["observation"] = {"results": [reply]}
        step_extra: dict[str, Any] = {"terminated": turn.terminated, "truncated": turn.truncated}
        if turn.reward is not None:
            step_extra["reward"] = turn.reward
        step["extra"] = step_extra
        steps.append(step)
    if not steps:
        raise AtifError(f"{session_id}: an episode with no prompt and no action has no ATIF trajectory")
    agent: dict[str, Any] = {"name": agent_name, "version": __version__}
    if model_name:
        agent["model_name"] = model_name
    out: dict[str, Any] = {"schema_version": ATIF_VERSION, "session_id": session_id, "agent": agent, "steps": steps}
    out["final_metrics"] = {"total_steps": len(steps), "extra": dict(result or {})}
    if extra:
        out["extra"] = dict(extra)
    return out


def _tool_calls(action: str, step_id: int) -> list[dict[str, Any]]:
    """The ``<tool_call>`` tags of an action as ATIF tool calls (ids ``call-<step>-<n>``);
    none for an action without tags or with a malformed one (it stays the step's message)."""
    try:
        parsed = parse_tool_action(action)
    except ActionFormatError:
        return []
    return [{"tool_call_id": f"call-{step_id}-{n}", "function_name": call.name, "arguments": dict(call.arguments)}
            for n, call in enumerate(parsed.calls, 1)]


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def trajectory_from_transcript(row: Mapping[str, Any], session_id: str) -> dict[str, Any]:
    """A run's transcript row (``transcripts.jsonl`` of the run archive: ``messages``,
    ``rewards``, ``return``...) as ATIF. The reply after the last action is not recorded
    there, so the last agent step has no observation."""
    messages = row.get("messages")
    if not isinstance(messages, list):
        raise AtifError(f"{session_id}: the transcript has no list of messages")
    rewards = row.get("rewards") if isinstance(row.get("rewards"), list) else []
    texts = [(str(m.get("role")), str(m.get("content") or "")) for m in messages if isinstance(m, Mapping)]
    first_action = next((i for i, (role, _) in enumerate(texts) if role == "assistant"), len(texts))
    prompts = texts[:first_action]
    turns: list[EpisodeTurn] = []
    rest = texts[first_action:]
    for i, (role, text) in enumerate(rest):
        if role != "assistant":
            continue
        reply = rest[i + 1][1] if i + 1 < len(rest) and rest[i + 1][0] != "assistant" else None
        k = len(turns)
        turns.append(EpisodeTurn(text, reply, _finite(rewards[k]) if k < len(rewards) else None))
    if turns:
        last = turns[-1]
        turns[-1] = EpisodeTurn(
            last.action, last.observation, last.reward, bool(row.get("terminated")), bool(row.get("truncated"))
        )
    result = {k: row[k] for k in ("return", "turns", "terminated", "truncated", "hung", "error") if k in row}
    if _finite(row.get("return")) is not None:
        result["success"] = is_win(float(row["return"]))
    extra = {k: row[k] for k in ("env_id", "iteration", "hinted") if k in row}
    return atif_trajectory(session_id=session_id, prompts=prompts, turns=turns, result=result, extra=extra)


def trajectory_from_episode(episode: Mapping[str, Any], session_id: str) -> dict[str, Any]:
    """A task's episode file (what ``spade-episode`` keeps) as ATIF."""
    turns = [episode_turn(t) for t in episode.get("turns", [])]
    last = turns[-1] if turns else None
    ret = episode_return(last.reward if last else None, bool(last and last.terminated), error=AtifError)
    result = {"return": ret, "success": is_win(ret), "turns": len(turns)}
    return atif_trajectory(
        session_id=session_id,
        prompts=[("user", str(episode.get("first_observation", "")))],
        turns=turns,
        result=result,
        extra={"env_id": episode.get("env_id"), "seed": episode.get("seed")},
    )


def episode_turn(data: Any) -> EpisodeTurn:
    """One turn of an episode file (``action``, ``observation``, ``reward``, the end flags)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("action"), str):
        raise AtifError("the episode file holds a turn without an action")
    return EpisodeTurn(
        data["action"],
        str(data.get("observation", "")),
        _finite(data.get("reward")),
        bool(data.get("terminated")),
        bool(data.get("truncated")),
    )


__all__ = ["ATIF_VERSION", "AtifError", "EpisodeTurn", "atif_trajectory", "episode_turn", "trajectory_from_episode",
           "trajectory_from_transcript"]
