"""Corpus grounding: documents the designer builds environments around.

Registered through ``spade_register_corpora`` as ``pydocs`` (embedded default), ``jsonl``,
``parquet`` and ``hf``.
"""

from .base import Corpus, Document, chunk_words, truncate_words
from .files import JsonlCorpus, ParquetCorpus
from .pydocs import PyDocsCorpus

__all__ = [
    "Corpus",
    "Document",
    "HFCorpus",
    "JsonlCorpus",
    "ParquetCorpus",
    "PyDocsCorpus",
    "chunk_words",
    "truncate_words",
]


def __getattr__(name: str):  # datasets is heavy; import it only when asked for
    if name == "HFCorpus":
        from .hf import HFCorpus

        return HFCorpus
    raise AttributeError(name)
