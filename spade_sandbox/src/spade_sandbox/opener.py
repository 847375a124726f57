"""Opening an environment: :func:`open_env`, the one function that turns an environment's
source, its terms (turn cap, reward range, class, allowed helper modules) and whether it is
trusted into a Gymnasium environment whose every call runs under the sandbox's deadline.

* **untrusted** (store code, imports, anything generated): a :class:`~spade_sandbox.env.SandboxedEnv`
  in the process-wide pool of the caller's ``[spade.sandbox]`` settings: the static
  allow-list, the runtime guard and every OS layer;
* **trusted** (a plugin's seed environments): a worker of the process-wide *trusted* pool
  of those settings (:meth:`SandboxLauncher.trusted_pool
  <spade_sandbox.launcher.SandboxLauncher.trusted_pool>`): a process of its own with the
  same call deadline, memory and CPU limits, but none of the confinement, so the code
  imports its plugin's own modules as it would in this process.

Either way a call past ``call_timeout_s`` kills the worker and raises
:class:`~spade_sandbox.errors.SandboxTimeout` (kind ``timeout``), the caller goes on, and
the values crossing back are checked by the contract's checks. The core reaches this
function through the ``sandbox`` env runner (``spade_sandbox.plugin.RUNNER``): ``gymnasium.make``
of a seed or a stored environment, ``spade play`` and ``spade eval`` all open through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .default import active_sandbox_settings, trusted_pool
from .env import SandboxedEnv
from .errors import EnvCodeError

if TYPE_CHECKING:
    from spade_core.sandbox_settings import SandboxSettings

    from .pool import SandboxPool

#: The trusted pools, by settings and module path (a folder put on ``sys.path`` later, as a
#: test or a notebook does, is seen by a pool made after it).


def open_env(
    source: str,
    *,
    max_turns: int | None = None,
    allowed_modules: Iterable[str] = (),
    reward_range: tuple[float, float] | None = None,
    class_name: str | None = None,
    render_mode: str | None = None,
    sandbox: SandboxSettings | None = None,
    trusted: bool = False,
    pool: SandboxPool | None = None,
    isolation: str = "",
) -> SandboxedEnv:
    """The environment ``source`` defines, opened where its trust allows (see the module
    docstring); ``sandbox`` is the caller's ``[spade.sandbox]`` (``None``: the active
    configuration's, the ``gymnasium.make`` edge). ``allowed_modules`` widen the static
    allow-list of untrusted code; trusted code needs none.

    ``pool``: a pool of the caller's own instead of the process-wide one, made by its
    :class:`~spade_sandbox.launcher.SandboxLauncher` (``pool()`` for untrusted code,
    ``trusted_pool()`` for trusted code: a server that keeps its own deadline and workers);
    untrusted code is refused a pool without the static check. ``isolation``: the pool's
    isolation key (instances of different keys never share a worker process)."""
    if not trusted:
        if pool is not None and pool.skip_static:
            raise ValueError("untrusted code opens in a sandbox pool (SandboxLauncher.pool()), not a trusted one")
        return SandboxedEnv(source, pool=pool, max_turns=max_turns, allowed_modules=allowed_modules,
                            reward_range=reward_range or (0.0, 1.0), class_name=class_name, render_mode=render_mode,
                            sandbox=sandbox, isolation=isolation)
    if pool is None:
        pool = trusted_pool(sandbox if sandbox is not None else active_sandbox_settings())
    try:
        return SandboxedEnv(source, pool=pool, max_turns=max_turns, reward_range=reward_range or (0.0, 1.0),
                            class_name=class_name, render_mode=render_mode, isolation=isolation)
    except EnvCodeError as exc:
        if "ModuleNotFoundError" in exc.message or "No module named" in exc.message:
            exc.message += (" (a trusted seed runs in a worker process with this interpreter's module path, every "
                            "folder of sys.path; a package installed in editable mode through an import hook, "
                            "setuptools' finder for a flat layout, is not found there: use the src layout or a "
                            "regular install)")
        raise
