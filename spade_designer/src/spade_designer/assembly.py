"""Building a :class:`~.designer.Designer` from configuration through the plugin registries.

The CLI and the trainer assemble designers the same way: backend, corpus and memory by
their registered names (``[designer]`` config), the store and the validation pipeline
from the SPADE config.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_core.config import SpadeConfig

from .config import DesignerConfig
from .designer import Designer

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins
    from spade_core.store import EnvStore

    from .corpus.base import Corpus
    from .llm.base import LLMBackend
    from .memory import Memory
    from .validation import Validator


def create_backend(config: DesignerConfig, plugins: SpadePlugins) -> LLMBackend:
    return plugins.create("llm_backends", config.backend, model=config.model, **config.backend_options)


#: ``corpus = "none"`` / ``memory = "none"``: the designer is not grounded on documents /
#: shows no earlier environments (the paper's no-corpus and no-memory ablations).
NONE = "none"


def create_corpus(config: DesignerConfig, plugins: SpadePlugins) -> Corpus | None:
    if config.corpus == NONE:
        return None
    return plugins.create("corpora", config.corpus, **config.corpus_options)


def create_memory(config: DesignerConfig, plugins: SpadePlugins, store: EnvStore) -> Memory | None:
    if config.memory == NONE:
        return None
    return plugins.create("memories", config.memory, store=store, policy=config.memory_policy)


def create_validator(spade_config: SpadeConfig) -> Validator:
    """The validation pipeline with its own sandbox pool, configured by ``[validation]``
    and ``[spade.sandbox]``."""
    from spade_sandbox.launcher import SandboxLauncher

    from .validation import ValidationConfig, Validator

    vconfig = ValidationConfig.from_section(spade_config.section("validation"))
    return Validator(config=vconfig, launcher=SandboxLauncher.from_config(spade_config))


def assemble_designer(
    spade_config: SpadeConfig,
    config: DesignerConfig,
    *,
    store: EnvStore,
    plugins: SpadePlugins | None = None,
    backend: LLMBackend | None = None,
    validator: Validator | None = None,
) -> Designer:
    """A designer wired from configuration; pass ``backend`` / ``validator`` to reuse
    ones already running (the trainer's in-training model, a shared pool)."""
    if plugins is None:
        from spade_core.plugins import get_plugins

        plugins = get_plugins()
    return Designer(
        backend if backend is not None else create_backend(config, plugins),
        store,
        validator if validator is not None else create_validator(spade_config),
        create_corpus(config, plugins),
        create_memory(config, plugins, store),
        config,
        plugins=plugins,
    )
