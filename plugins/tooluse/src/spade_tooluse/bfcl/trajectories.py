"""Trajectories (per turn, per message, the calls) played in a :class:`~.env.BfclEnv`."""

from __future__ import annotations

from typing import Any

from spade_core.actions import format_tool_calls

from .env import BfclEnv, Trajectory
from .execution import ApiSet
from .loader import BfclEntry


def ground_truth_trajectory(entry: BfclEntry) -> Trajectory:
    """The entry's answer as a trajectory: one message per turn holding every call."""
    apis = ApiSet(entry)
    return [[[apis.to_tool_call(t) for t in turn]] if turn else [] for turn in entry.ground_truth]


def trajectory_actions(trajectory: Trajectory) -> list[str]:
    """The agent messages that play ``trajectory``: each turn's messages, then a reply
    without calls that ends the turn."""
    out = []
    for turn in trajectory:
        for calls in turn:
            if calls:
                out.append(format_tool_calls(list(calls)))
        out.append("<answer>Done.</answer>")
    return out


def score_trajectory(entry: BfclEntry, trajectory: Trajectory) -> dict[str, Any]:
    """Play ``trajectory`` in a :class:`BfclEnv` to the end; the final ``info`` plus reward,
    and under ``"played"`` the calls as the environment recorded them (what an evaluation
    hands the official checker)."""
    env = BfclEnv(entry, stop_on_failure=False)
    env.reset()
    reward: float = 0.0
    info: dict[str, Any] = {}
    for action in trajectory_actions(trajectory):
        _, reward, terminated, _, info = env.step(action)
        if terminated:
            break
    played = env.trajectory
    env.close()
    return {"reward": reward, **info, "played": played}
