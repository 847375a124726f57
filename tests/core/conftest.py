"""Shared fixtures of the core suite: the reference-format fixture environments and a
fresh SPADE_HOME per test for anything that touches the store or the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.source import load_trusted_class

FIXTURES = Path(__file__).parent / "fixtures"
REFERENCE_ENVS = FIXTURES / "reference_envs"
BROKEN_ENVS = FIXTURES / "broken_envs"
POOLS = FIXTURES / "pools"


def reference_class(stem: str) -> type:
    """The environment class of ``fixtures/reference_envs/<stem>.py`` (trusted test code)."""
    path = REFERENCE_ENVS / f"{stem}.py"
    return load_trusted_class(path.read_text(encoding="utf-8"), source_name=str(path.name))


@pytest.fixture
def spade_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty SPADE_HOME, also the working directory (so no stray spade.toml is read)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home
