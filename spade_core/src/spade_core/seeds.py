"""A plugin's seed environments as Gymnasium environments: the entry points
``gymnasium.make`` calls for the seeds :mod:`spade_core.registry` registers, and
:func:`open_trusted_env`, the one way the core opens trusted code (``spade play`` and
``spade eval`` open seeds through it too).

Trusted code is a plugin's own: it may import any module its plugin imports. It runs in a
worker process of the sandbox's trusted pool, under the call deadline of
``[spade.sandbox]`` (``spade_sandbox.opener.open_env``, reached through the ``sandbox`` env
runner: the core imports no package above it), so a ``step()`` that hangs is stopped with
the ``call_timeout`` error store code gets. In this process, with no deadline, only when
asked (``in_process``) or when no plugin provides the runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .runners import SANDBOX

if TYPE_CHECKING:
    from .env import TextEnv
    from .sandbox_settings import SandboxSettings

__all__ = ["make_seed_env", "open_trusted_env", "refused_seed_env"]


def make_seed_env(
    path: str,
    class_name: str | None = None,
    max_turns: int | None = None,
    render_mode: str | None = None,
    reward_range: tuple[float, float] | None = None,
    in_process: bool = False,
) -> Any:
    """A seed environment (trusted plugin code), opened by :func:`open_trusted_env`: in a
    worker process under the call deadline of ``[spade.sandbox]``, or in this process with
    ``gymnasium.make(id, in_process=True)``."""
    from .errors import EnvLoadError

    try:
        source = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise EnvLoadError(f"cannot read the seed environment: {exc.strerror}", source_name=path) from None
    return open_trusted_env(source, source_name=path, class_name=class_name, max_turns=max_turns,
                            reward_range=reward_range, render_mode=render_mode, in_process=in_process)


def open_trusted_env(
    source: str,
    *,
    source_name: str,
    class_name: str | None = None,
    max_turns: int | None = None,
    reward_range: tuple[float, float] | None = None,
    render_mode: str | None = None,
    sandbox: SandboxSettings | None = None,
    in_process: bool = False,
) -> TextEnv:
    """Trusted code (a plugin's seed environment) as a Gymnasium environment: through the
    ``sandbox`` env runner with ``trusted=True`` (``spade_sandbox.opener.open_env``: a worker
    process of its own, killed at ``sandbox``'s call deadline with the ``call_timeout`` error
    store code gets, importing its plugin's modules freely; ``None``: the active
    configuration's ``[spade.sandbox]``). In this process, with no deadline, when
    ``in_process`` or when no loaded plugin provides that runner (spade-sandbox not
    installed). The reward range enforced is the class's own ``reward_range`` where it
    declares one, else ``reward_range`` (the domain's)."""
    from .env import ReferenceEnvAdapter, declared_reward_range
    from .errors import EnvContractError

    try:
        declared = declared_reward_range(source, class_name)
    except (SyntaxError, ValueError, RecursionError, MemoryError, EnvContractError):
        declared = None  # the load reports a source that does not parse
    reward_range = declared or (tuple(reward_range) if reward_range else None)  # type: ignore[assignment]
    from .seed_index import env_runner

    runner = None if in_process else env_runner(SANDBOX)
    if runner is None:
        from .source import instantiate, load_trusted_class

        cls = load_trusted_class(source, class_name, source_name=source_name)
        return ReferenceEnvAdapter(lambda: instantiate(cls), max_turns=max_turns, reward_range=reward_range,
                                   render_mode=render_mode)
    if sandbox is None:
        from .run_settings import run_settings  # no pydantic on the gymnasium.make path

        sandbox = run_settings().sandbox
    return runner.make_env(source, max_turns=max_turns, allowed_modules=(), reward_range=reward_range,
                           class_name=class_name, render_mode=render_mode, sandbox=sandbox, trusted=True)


def refused_seed_env(reason: str, **_: Any) -> Any:
    """The entry point of a seed a plugin got wrong: raises why it is not registered."""
    from .errors import PluginError

    raise PluginError(f"this seed environment is not registered: {reason} (`spade plugins --check` lists every problem)")
