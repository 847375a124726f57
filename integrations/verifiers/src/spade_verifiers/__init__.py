"""SPADE registry environments for verifiers 0.4, played through a running ``spade serve``.

``vf-eval spade-verifiers --env.taskset.base-url http://127.0.0.1:8000 --env.taskset.ids
code_breaker-v1 ...`` (verifiers finds this package by the taskset id; without ids, every
environment the server serves, a ``--all`` server's whole registry included), or in Python ``spade_verifiers.load_environment(base_url=...,
ids=[...])``. See README.md.

verifiers reads the plugin classes from ``__all__``: one ``Taskset``, one ``Env`` and one
``Harness`` subclass.
"""

from .client import (
    EmptySelection,
    EnvironmentFailed,
    SelectionError,
    ServerRefused,
    ServerUnreachable,
    SpadeServeError,
    UnknownEnvironment,
)
from .environment import (
    TASKSET_ID,
    SpadeChatHarness,
    SpadeChatHarnessConfig,
    SpadeData,
    SpadeEnv,
    SpadeEnvConfig,
    SpadeTask,
    SpadeTaskset,
    SpadeTasksetConfig,
    load_environment,
)
from .protocol import SYSTEM_PROMPT

__all__ = [
    "SYSTEM_PROMPT",
    "TASKSET_ID",
    "EmptySelection",
    "EnvironmentFailed",
    "SelectionError",
    "ServerRefused",
    "ServerUnreachable",
    "SpadeChatHarness",
    "SpadeChatHarnessConfig",
    "SpadeData",
    "SpadeEnv",
    "SpadeEnvConfig",
    "SpadeServeError",
    "SpadeTask",
    "SpadeTaskset",
    "SpadeTasksetConfig",
    "UnknownEnvironment",
    "load_environment",
]
