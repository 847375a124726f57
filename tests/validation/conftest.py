"""Fixtures of the validation tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
sys.path.insert(0, str(HERE))

from inprocess import InProcessRunner  # noqa: E402


@pytest.fixture
def inprocess_runner() -> InProcessRunner:
    """TEST DOUBLE runner (trusted corpus code only)."""
    return InProcessRunner()


def corpus_source(kind: str, name: str) -> str:
    return (CORPUS / kind / f"{name}.py").read_text(encoding="utf-8")
