"""OpenEnv 0.10's wire models, restated field for field.

Why not import them: importing anything under ``openenv.core`` runs its package
``__init__``, which imports gradio, mcp and fastmcp (about 7 s cold and 200 MiB here) for a
server that needs a few small pydantic models. ``tests/serve/test_wire.py`` checks every
model here against OpenEnv's own (same fields, types, defaults and constraints), and the
protocol tests play through OpenEnv's clients, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer


class WSErrorCode(StrEnum):
    """OpenEnv's WebSocket error codes (serving adds its own in :mod:`.errors`)."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"


class HealthStatus(StrEnum):
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    DEGRADED = "degraded"


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Observation(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)
    done: bool = False
    reward: bool | int | float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class State(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)
    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


class ResetRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = Field(default=None, max_length=255)


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    action: dict[str, Any]
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = Field(default=None, max_length=255)


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EnvironmentMetadata(_Message):
    name: str
    description: str
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None


class SchemaResponse(_Message):
    action: dict[str, Any]
    observation: dict[str, Any]
    state: dict[str, Any]
    reset_observation: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _without_undeclared_reset_schema(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.reset_observation is None:
            data.pop("reset_observation", None)
        return data


class HealthResponse(_Message):
    status: HealthStatus = HealthStatus.HEALTHY


class ListTasksRequest(_Message):
    split: str


class NumTasksRequest(_Message):
    split: str


class GetTaskRequest(_Message):
    split: str
    index: int


class GetTaskRangeRequest(_Message):
    split: str
    start: int | None = None
    stop: int | None = None


class WSResetMessage(_Message):
    type: Literal["reset"] = "reset"
    data: dict[str, Any] = Field(default_factory=dict)


class WSStepMessage(_Message):
    type: Literal["step"] = "step"
    data: dict[str, Any]


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WSObservationResponse(_Response):
    type: Literal["observation"] = "observation"
    data: dict[str, Any]


class WSStateResponse(_Response):
    type: Literal["state"] = "state"
    data: dict[str, Any]


class WSErrorResponse(_Response):
    type: Literal["error"] = "error"
    data: dict[str, Any]


#: Ours -> the name of OpenEnv's model in ``openenv.core.env_server.types``.
OPENENV_NAMES = {
    WSErrorCode: "WSErrorCode",
    HealthStatus: "HealthStatus",
    Action: "Action",
    Observation: "Observation",
    State: "State",
    ResetRequest: "ResetRequest",
    StepRequest: "StepRequest",
    EnvironmentMetadata: "EnvironmentMetadata",
    SchemaResponse: "SchemaResponse",
    HealthResponse: "HealthResponse",
    ListTasksRequest: "ListTasksRequest",
    NumTasksRequest: "NumTasksRequest",
    GetTaskRequest: "GetTaskRequest",
    GetTaskRangeRequest: "GetTaskRangeRequest",
    WSResetMessage: "WSResetMessage",
    WSStepMessage: "WSStepMessage",
    WSObservationResponse: "WSObservationResponse",
    WSStateResponse: "WSStateResponse",
    WSErrorResponse: "WSErrorResponse",
}
