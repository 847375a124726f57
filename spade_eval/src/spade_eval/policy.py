"""Which policy ``spade eval`` measures, from one string:

* ``embedded``: the embedded SmolLM2-135M-Instruct (transformers, CPU);
* ``PATH``: a local model folder (a transformers checkpoint, ``config.json`` inside);
* ``run:RUN_DIR``: the newest checkpoint of a self-play run;
* ``openai:BASE_URL[#MODEL]``: any OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp,
  ``transformers serve``), e.g. ``openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-4B``.

Each resolves to an LLM backend of the loaded plugins and a *snapshot* label, stored with
the result, saying which weights were measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_core.errors import SpadeError

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins
    from spade_designer.llm.base import LLMBackend


class PolicyError(SpadeError, ValueError):
    """A policy string that names nothing usable."""


@dataclass(frozen=True)
class PolicySpec:
    backend: str
    options: dict[str, Any]
    snapshot: str


def _latest_checkpoint_model(run: Path) -> Path:
    root = run / "checkpoints"
    found = sorted(root.glob("checkpoint-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])) if root.is_dir() else []
    for checkpoint in reversed(found):
        models = sorted(p.parent for p in checkpoint.rglob("config.json"))
        if models:
            return models[0]
    raise PolicyError(f"{run} has no checkpoint with model weights (a checkpoints/checkpoint-N folder holding "
                      "config.json); train with checkpoint_every, or name a model folder")


def parse_policy(text: str) -> PolicySpec:
    """The backend and options a policy string names; :class:`PolicyError` otherwise."""
    text = text.strip()
    if text == "embedded":
        return PolicySpec("transformers", {}, "embedded:SmolLM2-135M-Instruct")
    if text.startswith("openai:"):
        url, _, model = text.removeprefix("openai:").partition("#")
        if not url.startswith(("http://", "https://")):
            raise PolicyError(f"openai: takes an http(s) base URL, e.g. openai:http://127.0.0.1:8000/v1 (got {url!r})")
        return PolicySpec("openai", {"base_url": url, "model": model or "default"}, f"openai:{url}#{model or 'default'}")
    if text.startswith("run:"):
        run = Path(text.removeprefix("run:"))
        model = _latest_checkpoint_model(run)
        return PolicySpec("transformers", {"model": str(model)}, f"{run.name}/{model.relative_to(run)}")
    path = Path(text)
    if path.is_dir() and (path / "config.json").is_file():
        return PolicySpec("transformers", {"model": str(path)}, str(path))
    raise PolicyError(f"unknown policy {text!r}: use embedded, a model folder, run:RUN_DIR or openai:BASE_URL[#MODEL]")


def make_backend(spec: PolicySpec, plugins: SpadePlugins) -> LLMBackend:
    """The ``llm_backends`` plugin ``spec`` names, built with its options."""
    return plugins.create("llm_backends", spec.backend, **spec.options)
