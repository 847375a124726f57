"""The ``openai`` backend against a real OpenAI-compatible server: ``transformers serve``
on loopback, serving the embedded SmolLM2 model (the folder the transformers backend
converts its GGUF file into), offline. A design round and a ``spade eval`` go through it.
The hand-written HTTP double in test_llm_openai.py stays for the error paths only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade_core.app.cli import build_app
from spade_designer.llm.openai_backend import OpenAIBackend
from typer.testing import CliRunner

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def served(model_server: tuple[str, str]) -> tuple[str, str]:
    """(base URL, model id) of the session's ``transformers serve`` holding the embedded model."""
    base, model = model_server
    return base + "/v1", model


def test_the_backend_chats_with_a_real_server(served: tuple[str, str]) -> None:
    url, model = served
    backend = OpenAIBackend(base_url=url, model=model)
    out = backend.chat([[{"role": "user", "content": "Say hello."}], [{"role": "user", "content": "Name a colour."}]],
                       max_new_tokens=8, temperature=0.0)
    assert len(out) == 2 and all(c.text.strip() for c in out)
    assert all(0 < c.completion_tokens <= 8 for c in out)


def test_spade_eval_through_the_real_server(served: tuple[str, str], tmp_path: Path) -> None:
    url, model = served
    result = CliRunner().invoke(build_app(), [
        "eval", "--suite", "reasoning_gym", "--size", "1", "-o", "tasks=gcd", "--max-new-tokens", "16",
        "--policy", f"openai:{url}#{model}", "--run", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{"):])
    assert out["overall"]["n"] == 1 and out["overall"]["errors"] == 0
    assert out["snapshot"] == f"openai:{url}#{model}"


def test_a_design_round_through_the_real_server(served: tuple[str, str], tmp_path: Path) -> None:
    url, model = served
    config = tmp_path / "spade.toml"
    config.write_text(f'[spade]\nstore_url = "sqlite:///{tmp_path / "store.db"}"\n'
                      f'[designer]\nbackend = "openai"\nmodel = "{model}"\n'
                      f'[designer.backend_options]\nbase_url = "{url}"\n')
    result = CliRunner().invoke(build_app(), ["--config", str(config), "design", "--domain", "games",
                                              "--skill", "logical_deduction", "--n", "1", "--profile", "cpu",
                                              "--max-new-tokens", "48", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{"):])
    assert out["designed"] == 1 and out["model"] == model
    assert out["completion_tokens"] > 0  # the reply came from the server's model
