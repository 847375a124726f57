"""Loading the shared policy (model + tokenizer) named by :class:`~.config.ModelSettings`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import ModelSettings
from .errors import ConfigError


def embedded_cache_dir() -> Path:
    """Where the de-quantised embedded model is kept as safetensors (under ``SPADE_HOME``)."""
    from spade_core.config import spade_home

    return spade_home() / "models" / "SmolLM2-135M-Instruct-f32"


def plain_trainable(model: Any) -> Any:
    """Drop the GGUF quantizer marks of a model whose weights were de-quantised on load.

    transformers keeps ``is_quantized``/``hf_quantizer`` on GGUF-loaded models although
    their parameters are ordinary float tensors, and then refuses to fine-tune them.
    """
    model.is_quantized = False
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def _load_embedded(settings: ModelSettings, dtype: Any) -> tuple[Any, Any]:
    """The embedded SmolLM2: de-quantised from its GGUF file once, then read from the cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache = embedded_cache_dir()
    if not (cache / "config.json").is_file():
        from spade_designer.llm.transformers_backend import default_model_path, load_model

        folder, gguf = default_model_path()
        model, tok = load_model(folder, gguf_file=gguf, device="cpu", dtype="float32")
        tmp = cache.with_name(cache.name + ".partial")
        plain_trainable(model).save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.rename(cache)  # a crash mid-write never leaves a half cache behind
    tok = AutoTokenizer.from_pretrained(str(cache), local_files_only=True)
    # typed as Any: transformers' decorated ``to`` confuses mypy about its ``self``
    cached: Any = AutoModelForCausalLM.from_pretrained(str(cache), dtype=dtype, local_files_only=True)
    return cached.to(settings.device), tok


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
        model, tok = _load_embedded(settings, dtype)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(settings.source, gguf_file=settings.gguf_file)
            loaded: Any = AutoModelForCausalLM.from_pretrained(settings.source, gguf_file=settings.gguf_file, dtype=dtype)
            model = loaded.to(settings.device)
        except OSError as exc:
            raise ConfigError(f"model.source {settings.source!r} could not be loaded: {exc}") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model.config.use_cache = True
    return model, tok
