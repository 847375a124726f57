"""SPADE core: the environment contract, metadata, store, Gymnasium registry and plugins.

Importing this package registers every admitted environment of the active store and every
plugin's seed environments with Gymnasium as ``spade/<name>-v<N>``::

    import gymnasium as gym
    import spade_core
    gym.register_envs(spade_core)
    env = gym.make("spade/<name>-v1")

Registration is cheap (lazy entry points; nothing heavy is imported until ``make``) and
never fails the import: a missing or broken store is reported as a warning. The public
names below are imported on first access, so the import itself stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_attributes

if TYPE_CHECKING:
    from .actions import ToolAction, ToolCall, format_boxed, parse_boxed, parse_tool_action
    from .env import ReferenceEnvAdapter, TextEnv, UnicodeText
    from .errors import SpadeError

from ._version import __version__ as __version__

_LAZY = {
    "ReferenceEnvAdapter": ".env",
    "TextEnv": ".env",
    "UnicodeText": ".env",
    "SpadeError": ".errors",
    "ToolAction": ".actions",
    "ToolCall": ".actions",
    "format_boxed": ".actions",
    "parse_boxed": ".actions",
    "parse_tool_action": ".actions",
}

__all__ = [
    "ReferenceEnvAdapter",
    "SpadeError",
    "TextEnv",
    "ToolAction",
    "ToolCall",
    "UnicodeText",
    "__version__",
    "format_boxed",
    "parse_boxed",
    "parse_tool_action",
]


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


from .moved import install as _install_moved  # noqa: E402

_install_moved()  # the old paths of the application modules (spade_core.moved)

from .registry import register_on_import as _register_on_import  # noqa: E402

_register_on_import()
