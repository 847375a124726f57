"""Fixtures of the trainer tests: a tiny tokenizer and model built in-process (no download)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def tiny_tokenizer() -> Any:
    from spade_trainer.tiny import build_tiny_tokenizer

    return build_tiny_tokenizer()


@pytest.fixture()
def tiny_model(tiny_tokenizer: Any) -> Any:
    from spade_trainer.tiny import build_tiny_model

    return build_tiny_model(tiny_tokenizer)
