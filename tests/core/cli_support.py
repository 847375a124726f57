"""Running the real ``spade`` app in-process (typer's CliRunner) against a real store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spade_core.app.cli import build_app
from spade_core.config import load_config
from spade_core.store import EnvStore
from typer.testing import CliRunner


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def spade(*args: str, input: str | None = None, plugins: Any = None) -> Run:
    """``spade ARGS`` with ``input`` on stdin; a wide terminal so tables do not truncate."""
    result = CliRunner().invoke(build_app(plugins), list(args), input=input, env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def open_store() -> EnvStore:
    """The store of the current SPADE_HOME (what the CLI uses)."""
    return EnvStore.open(load_config())
