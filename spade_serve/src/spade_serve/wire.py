"""openenv-core 0.3's wire models, restated field for field.

Why not import them: importing anything under ``openenv.core`` runs its package
``__init__``, which imports gradio, mcp and fastmcp (about 7 s cold and 200 MiB here) for a
server that needs eight small pydantic models. ``tests/serve/test_wire.py`` checks every
model here against openenv-core's own (same fields, types, defaults and constraints), and
the protocol tests play through openenv-core's clients, so the two cannot drift apart
unnoticed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class WSErrorCode(StrEnum):
    """openenv-core's WebSocket error codes (serving adds its own in :mod:`.errors`)."""

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


class HealthResponse(_Message):
    status: HealthStatus = HealthStatus.HEALTHY


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


#: Ours -> the name of openenv-core's model in ``openenv.core.env_server.types``.
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
    WSResetMessage: "WSResetMessage",
    WSStepMessage: "WSStepMessage",
    WSObservationResponse: "WSObservationResponse",
    WSStateResponse: "WSStateResponse",
    WSErrorResponse: "WSErrorResponse",
}
