"""Hook implementations of spade_designer: LLM backends, corpora, memory and commands.

Every built-in is registered through the same hooks a third-party plugin would use;
factories import their heavy libraries only when called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spade_core.hookspecs import hookimpl

if TYPE_CHECKING:
    import typer
    from spade_core.config import SpadeConfig
    from spade_core.store import EnvStore

    from .config import MemoryPolicy
    from .memory import StoreMemory
    from .validation.admission import PipelineAdmission


def _transformers(model: Any = None, **options: Any) -> Any:
    from .llm.transformers_backend import TransformersBackend

    if model is None or isinstance(model, str):  # a path (or the embedded default)
        return TransformersBackend(model, **options)
    return TransformersBackend(model=model, **options)  # an already-loaded model object


def _openai(model: str | None = None, **options: Any) -> Any:
    from .llm.openai_backend import OpenAIBackend

    return OpenAIBackend(model=model or "default", **options)


def _vllm(model: str | None = None, **options: Any) -> Any:
    from .llm.vllm_backend import VLLMBackend

    return VLLMBackend(model, **options)


def _replay(model: str | None = None, **options: Any) -> Any:
    from .llm.replay import ReplayBackend

    del model  # replay has no model; the recording decides the text
    return ReplayBackend(**options)


@hookimpl
def spade_register_llm_backends(register: Callable[[str, Callable[..., Any]], None]) -> None:
    # the second argument's **options go to the class named third (checked before building)
    register("transformers", _transformers, "spade_designer.llm.transformers_backend:TransformersBackend")
    register("openai", _openai, "spade_designer.llm.openai_backend:OpenAIBackend")
    register("vllm", _vllm, "spade_designer.llm.vllm_backend:VLLMBackend")
    register("replay", _replay, "spade_designer.llm.replay:ReplayBackend")


def _pydocs(**options: Any) -> Any:
    from .corpus.pydocs import PyDocsCorpus

    return PyDocsCorpus(**options)


def _jsonl(**options: Any) -> Any:
    from .corpus.files import JsonlCorpus

    return JsonlCorpus(**options)


def _parquet(**options: Any) -> Any:
    from .corpus.files import ParquetCorpus

    return ParquetCorpus(**options)


def _hf(**options: Any) -> Any:
    from .corpus.hf import HFCorpus

    return HFCorpus(**options)


@hookimpl
def spade_register_corpora(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register("pydocs", _pydocs, "spade_designer.corpus.pydocs:PyDocsCorpus")
    register("jsonl", _jsonl, "spade_designer.corpus.files:JsonlCorpus")
    register("parquet", _parquet, "spade_designer.corpus.files:ParquetCorpus")
    register("hf", _hf, "spade_designer.corpus.hf:HFCorpus")


def _store_memory(store: EnvStore, policy: MemoryPolicy | dict[str, Any] | None = None, **options: Any) -> StoreMemory:
    from .config import MemoryPolicy
    from .memory import StoreMemory

    if isinstance(policy, dict):
        policy = MemoryPolicy.model_validate(policy)
    return StoreMemory(store, policy, **options)


@hookimpl
def spade_register_memories(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register("store", _store_memory, "spade_designer.memory:StoreMemory")


@hookimpl
def spade_register_commands(cli: typer.Typer) -> None:
    from . import commands

    commands.register(cli)


@hookimpl(specname="spade_register_commands")
def spade_register_validation_commands(cli: typer.Typer) -> None:
    """``spade validate`` and ``spade fuzz`` (the validation pipeline's own commands)."""
    from .validation import commands as validation_commands

    validation_commands.register(cli)


@hookimpl
def spade_admission_validator(config: SpadeConfig) -> PipelineAdmission:
    """``spade import --status admitted`` admits what the validation pipeline passes."""
    from .validation.admission import admission_validator

    return admission_validator(config)


@hookimpl
def spade_register_config_sections(register: Callable[[str, Any], None]) -> None:
    """``[designer]`` (the one designer table: ``spade design`` reads it, ``spade selfplay``
    lays ``[selfplay.designer]`` over it) and ``[validation]``."""
    register("designer", "spade_designer.config:DesignerConfig")
    register("validation", "spade_designer.validation.config:ValidationConfig")
