"""The action, observation and state of a served SPADE environment, in OpenEnv's shapes.

They subclass OpenEnv's ``Action`` / ``Observation`` / ``State`` (restated in
:mod:`.wire`). A SPADE environment is a text environment: the action is one string (``\\boxed{...}`` for
boxed domains, ``<tool_call>...</tool_call>`` / ``<answer>...</answer>`` for tool-use
ones), the observation one string. OpenEnv's observation has a single ``done``; SPADE
keeps Gymnasium's two flags apart, so ``terminated`` and ``truncated`` travel both as
fields and in the observation's ``metadata`` (``done`` is their ``or``).
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from .wire import Action, Observation, State


class SpadeAction(Action):
    """One turn of the agent: the text sent to the environment's ``step``."""

    message: str = Field(description="The action text, e.g. \\boxed{42} or a <tool_call> block")


class SpadeObservation(Observation):
    """What ``reset`` and ``step`` return. ``metadata`` holds ``env_id``, ``session_id``,
    ``episode_id``, ``seed``, ``step_count``, ``terminated`` and ``truncated``."""

    text: str = Field(default="", description="The environment's observation text")
    terminated: bool = Field(default=False, description="The episode reached a terminal state")
    truncated: bool = Field(default=False, description="The episode was cut off (max_turns, or the env said so)")
    info: dict[str, Any] = Field(default_factory=dict, description="The environment's info dict")
    #: On the wire ``tool_schemas``: OpenEnv's MCP client reads an observation that holds a
    #: ``tools`` key as a tools/list answer and drops its text. Read under either name.
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="OpenAI-format tool schemas (tool-use environments; at reset)",
        validation_alias=AliasChoices("tool_schemas", "tools"), serialization_alias="tool_schemas",
    )


class SpadeState(State):
    """A session's state (``/state``): openenv's ``episode_id`` and ``step_count`` plus
    the SPADE episode's flags and rewards."""

    env_id: str = ""
    session_id: str = ""
    seed: int | None = None
    terminated: bool = False
    truncated: bool = False
    #: The sum of the step rewards so far (partial progress counted at every step): not
    #: the episode's return, which is ``episode_return``.
    total_reward: float = 0.0
    #: The last step's reward (``None`` before the first step).
    last_reward: float | None = None
    #: The episode's return as SPADE defines it (``spade_core.returns.episode_return``):
    #: the last reward, clipped to [-1, 1], once the environment ended the episode
    #: (terminated), else 0.
    episode_return: float = 0.0


def wire_result(observation: SpadeObservation) -> dict[str, Any]:
    """The ``{"observation", "reward", "done"}`` body of a reset/step answer.

    OpenEnv's own serializer leaves ``metadata`` out of the observation; here it
    stays in, because that is where a client finds ``terminated`` and ``truncated``. The
    tool schemas go as ``tool_schemas`` (:class:`SpadeObservation`)."""
    return {
        "observation": observation.model_dump(exclude={"reward", "done"}, by_alias=True),
        "reward": observation.reward,
        "done": observation.done,
    }


__all__ = ["SpadeAction", "SpadeObservation", "SpadeState", "wire_result"]
