"""spade_serve: SPADE registry environments as a service, over OpenEnv's protocol.

``spade serve`` exposes seed and admitted environments at ``/reset``, ``/step``,
``/state``, ``/schema``, ``/health`` and ``/ws`` (OpenEnv 0.10's routes and wire
shapes), and as MCP tools at ``/mcp`` (:mod:`spade_serve.mcp_tools`), each session a
sandboxed instance. Public API (imported lazily)::

    from spade_serve import (ServeSettings, SessionManager, SandboxEnvFactory, create_app,
                             build_catalog, SpadeEnvClient, SpadeAction, SpadeObservation,
                             SpadeState, RemoteTextEnv)

Importing this package registers the Gymnasium id ``spade/remote``:
``gym.make("spade/remote", url="http://host:8000", env_id="...")``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .catalog import EnvCatalog, ServedEnv, build_catalog
    from .client import SpadeEnvClient
    from .env_factory import SandboxEnvFactory
    from .errors import RemoteError, ServeError
    from .gym_remote import RemoteTextEnv
    from .models import SpadeAction, SpadeObservation, SpadeState
    from .sessions import SessionManager
    from .settings import ServeSettings

_EXPORTS = {
    "create_app": "app",
    "EnvCatalog": "catalog",
    "ServedEnv": "catalog",
    "build_catalog": "catalog",
    "SpadeEnvClient": "client",
    "SandboxEnvFactory": "env_factory",
    "RemoteError": "errors",
    "ServeError": "errors",
    "RemoteTextEnv": "gym_remote",
    "SpadeAction": "models",
    "SpadeObservation": "models",
    "SpadeState": "models",
    "SessionManager": "sessions",
    "ServeSettings": "settings",
}

__all__ = [
    "EnvCatalog",
    "RemoteError",
    "RemoteTextEnv",
    "SandboxEnvFactory",
    "ServeError",
    "ServeSettings",
    "ServedEnv",
    "SessionManager",
    "SpadeAction",
    "SpadeEnvClient",
    "SpadeObservation",
    "SpadeState",
    "build_catalog",
    "create_app",
]

#: The Gymnasium id of a remote session (string entry point: nothing is imported until make).
REMOTE_ENV_ID = "spade/remote"


def _register_remote() -> None:
    import gymnasium

    if REMOTE_ENV_ID not in gymnasium.registry:
        gymnasium.register(REMOTE_ENV_ID, entry_point="spade_serve.gym_remote:RemoteTextEnv", disable_env_checker=True)


_register_remote()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'spade_serve' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
