"""Configuration of where environments run: the local sandbox pool or Ray actors.

``[selfplay.rollout]`` in TOML::

    [selfplay.rollout]
    executor = "ray"                 # "local" (default) never imports ray
    [selfplay.rollout.ray]
    address = "ray://head:10001"     # None/"" starts a local Ray instance; "auto" joins one
    num_workers = 8                  # sandbox actors; None = one per CPU in the cluster
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RaySettings(BaseModel):
    """How to reach Ray and how many sandbox actors to start."""

    model_config = ConfigDict(extra="forbid")

    #: ``None`` starts a local instance (unless one is already initialised in this process),
    #: ``"auto"`` joins the cluster this machine belongs to, ``"ray://host:10001"`` a remote one.
    address: str | None = None
    #: Sandbox actors; ``None`` = one per CPU the cluster reports.
    num_workers: int | None = Field(default=None, ge=1)
    #: CPUs reserved per actor (its sandbox workers run on the same node).
    cpus_per_worker: float = Field(default=1.0, gt=0)
    #: Ray namespace of the actors (lets several runs share a cluster).
    namespace: str = "spade"
    #: Driver-side deadline added to the sandbox's own deadlines before an actor that does
    #: not answer is declared lost and killed (its items fail with ``SandboxTimeout``).
    actor_grace_s: float = Field(default=30.0, gt=0)


class RolloutExecutorSettings(BaseModel):
    """Which executor steps environments during rollouts."""

    model_config = ConfigDict(extra="forbid")

    executor: Literal["local", "ray"] = "local"
    ray: RaySettings = Field(default_factory=RaySettings)
