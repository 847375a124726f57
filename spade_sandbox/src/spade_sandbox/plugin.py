"""spade_sandbox's hook implementations: the ``sandbox`` runner of store code, its backends
and the ``spade sandbox`` commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spade_core.hookspecs import hookimpl
from spade_core.runners import SANDBOX, EnvRunner

if TYPE_CHECKING:
    import typer


def _native(*, spare: bool = True, cgroups: bool = True) -> Any:
    from .backends import ZygoteBackend

    return ZygoteBackend("native", spare=spare, cgroups=cgroups)


def _nsjail(*, binary: str | None = None, spare: bool = True, cgroups: bool = True) -> Any:
    from .backends import nsjail_backend

    return nsjail_backend(binary=binary, spare=spare, cgroups=cgroups)


def _bwrap(*, binary: str | None = None, spare: bool = True, cgroups: bool = True) -> Any:
    from .backends import bwrap_backend

    return bwrap_backend(binary=binary, spare=spare, cgroups=cgroups)


def _restricted() -> Any:
    from .restricted import RestrictedBackend

    return RestrictedBackend()


#: How the core runs environment code here: :func:`spade_sandbox.opener.open_env` (store code
#: in a :class:`~spade_sandbox.env.SandboxedEnv` of the default pool, whose zygote
#: :func:`spade_sandbox.prestart.prepare` starts at the first make, before the store is
#: read; seeds in the trusted pool).
RUNNER = EnvRunner(SANDBOX, make="spade_sandbox.opener:open_env", prepare="spade_sandbox.prestart:prepare")


@hookimpl
def spade_register_env_runners(register: Callable[[EnvRunner], None]) -> None:
    register(RUNNER)


@hookimpl
def spade_register_sandbox_backends(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register("native", _native)
    register("nsjail", _nsjail)
    register("bwrap", _bwrap)
    register("restricted", _restricted)


@hookimpl
def spade_register_commands(cli: typer.Typer) -> None:
    from .cli import register

    register(cli)
