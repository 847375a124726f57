"""Where untrusted environment code runs: the runners plugins register.

The core never imports the package that runs store code. A plugin (``spade_sandbox``'s is
the built-in one) registers an :class:`EnvRunner` through the ``spade_register_env_runners``
hook, naming its callables as ``"module:attribute"`` strings; the core imports them only
when it runs something, and the seed index (:mod:`spade_core.seed_index`) keeps the strings
so that ``import spade_core`` + the first ``gymnasium.make`` find the runner without loading
the plugins. ``store_envs_run`` in ``[spade]`` chooses the runner by name (``"sandbox"``, the
default); ``"in-process"`` is not a runner but the core's own trusted path.

Standard library only: imported on the path of ``import spade_core``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .env import TextEnv

#: The runner ``store_envs_run`` selects by default (registered by spade-sandbox).
SANDBOX = "sandbox"
#: The value of ``store_envs_run`` that runs store code in this process (no runner).
IN_PROCESS = "in-process"

_REF_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class EnvRunner:
    """A way to run untrusted environment code, as a plugin registers it.

    * ``name``: the value of ``store_envs_run`` that selects it (``"in-process"`` is taken);
    * ``make``: ``"module:callable"``; called as ``make(source, *, max_turns,
      allowed_modules, reward_range, class_name, render_mode, sandbox)``, it returns a
      :class:`~spade_core.env.TextEnv` whose code runs wherever the runner runs it, under
      ``sandbox`` (the caller's :class:`~spade_core.sandbox_settings.SandboxSettings`, the
      ``[spade.sandbox]`` table of the configuration it loaded). Seeds of installed plugins
      are made with ``trusted=True`` too: plugin code, run under the runner's call
      deadline but free to import its plugin's modules (``allowed_modules`` is then
      empty). It may raise any :class:`~spade_core.errors.SpadeError` the runner defines;
    * ``prepare``: ``"module:callable"`` or ``None``; called as ``prepare()`` at the start
      of each make from the store, before the store is read. It may start work that
      overlaps what follows (the sandbox boots its zygote); it must return quickly. Nothing
      calls it at import: importing a package starts no process.
    """

    name: str
    make: str
    prepare: str | None = None

    def __post_init__(self) -> None:
        if not self.name or self.name == IN_PROCESS:
            raise ValueError(f"an env runner's name must be non-empty and not {IN_PROCESS!r}: {self.name!r}")
        for field_name, ref in (("make", self.make), ("prepare", self.prepare)):
            if ref is not None and not _REF_RE.match(ref):
                raise ValueError(f"env runner {self.name!r}: {field_name} must be 'module:attribute', got {ref!r}")

    def make_env(self, source: str, **options: Any) -> TextEnv:
        """``make(source, **options)`` of the runner (imports its module first)."""
        env: TextEnv = resolve(self.make)(source, **options)
        return env

    def run_prepare(self) -> None:
        """``prepare()``, when the runner has one."""
        if self.prepare is not None:
            resolve(self.prepare)()

    def to_json(self) -> dict[str, str | None]:
        return {"name": self.name, "make": self.make, "prepare": self.prepare}

    @classmethod
    def from_json(cls, data: Any) -> EnvRunner:
        """The runner :meth:`to_json` wrote; ``ValueError`` for anything else."""
        if not isinstance(data, dict) or set(data) != {"name", "make", "prepare"}:
            raise ValueError(f"not an env runner record: {data!r}")
        if not (isinstance(data["name"], str) and isinstance(data["make"], str)):
            raise ValueError(f"not an env runner record: {data!r}")
        if data["prepare"] is not None and not isinstance(data["prepare"], str):
            raise ValueError(f"not an env runner record: {data!r}")
        return cls(data["name"], data["make"], data["prepare"])


def resolve(ref: str) -> Callable[..., Any]:
    """The object a ``"module:attribute"`` string names (the module is imported)."""
    module_name, _, attribute = ref.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{ref} is not callable")
    return target


def by_name(runners: Iterable[EnvRunner]) -> dict[str, EnvRunner]:
    """Runners keyed by name; ``ValueError`` naming a name registered twice."""
    found: dict[str, EnvRunner] = {}
    for runner in runners:
        if runner.name in found:
            raise ValueError(f"env runner {runner.name!r} registered twice")
        found[runner.name] = runner
    return found
