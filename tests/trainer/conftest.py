"""Fixtures of the trainer tests: a tiny tokenizer and model built in-process (no download)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

# The suite shares a small machine with other suites: one intra-op thread per process
# avoids oversubscription (measured: a forward pass twice as fast under load).
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_tokenizer() -> Any:
    from spade_trainer.tiny import build_tiny_tokenizer

    return build_tiny_tokenizer()


@pytest.fixture()
def tiny_model(tiny_tokenizer: Any) -> Any:
    from spade_trainer.tiny import build_tiny_model

    return build_tiny_model(tiny_tokenizer)
