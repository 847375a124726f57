"""Loading the shared policy (model + tokenizer) named by :class:`~.config.ModelSettings`."""

from __future__ import annotations

from typing import Any

from .config import ModelSettings
from .errors import ConfigError


def load_policy(settings: ModelSettings) -> tuple[Any, Any]:
    """``(model, tokenizer)``: ``embedded`` (SmolLM2-135M-Instruct GGUF, dequantised),
    ``tiny`` (built in-process), or a local folder / hub id (offline)."""
    import torch

    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[settings.dtype]
    if settings.source == "tiny":
        from .tiny import build_tiny_model, build_tiny_tokenizer

        tok = build_tiny_tokenizer()
        model = build_tiny_model(tok).to(dtype=dtype, device=settings.device)
    elif settings.source == "embedded":
        from spade_designer.llm.transformers_backend import load_model, default_model_path

        folder, gguf = default_model_path()
        model, tok = load_model(folder, gguf_file=gguf, device=settings.device, dtype=settings.dtype)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(settings.source, gguf_file=settings.gguf_file)
            model = AutoModelForCausalLM.from_pretrained(
                settings.source, gguf_file=settings.gguf_file, dtype=dtype
            ).to(settings.device)
        except OSError as exc:
            raise ConfigError(f"model.source {settings.source!r} could not be loaded: {exc}") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model.config.use_cache = True
    return model, tok
