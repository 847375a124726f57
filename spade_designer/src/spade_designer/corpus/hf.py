"""Hugging Face ``datasets`` as a corpus (when the hub or a local copy is reachable).

Map-style datasets sample a row uniformly. Streaming datasets cannot be indexed: the
sample is the first row of the stream shuffled with a seed drawn from the caller's
generator (buffered shuffle), so a seed still fixes the document for a given dataset
revision.
"""

from __future__ import annotations

import random
from typing import Any

from ..errors import CorpusError
from .base import Document


class HFCorpus:
    def __init__(self, path: str, *, config: str | None = None, split: str = "train", text_field: str = "text",
                 id_field: str | None = "id", title_field: str | None = "title", streaming: bool = False,
                 buffer_size: int = 1000, data_files: Any = None, name: str = "hf") -> None:
        try:
            import datasets
        except ImportError as exc:
            raise CorpusError(f"the datasets package is needed ({exc}): pip install 'spade-designer[datasets]'",
                              location=path) from None
        self.name = name
        self.path = path
        self.text_field, self.id_field, self.title_field = text_field, id_field, title_field
        self.streaming = streaming
        self.buffer_size = buffer_size
        try:
            self._ds = datasets.load_dataset(path, config, split=split, streaming=streaming, data_files=data_files)
        except Exception as exc:  # network, missing dataset, bad config: datasets raises many types
            raise CorpusError(f"could not load split {split!r}: {type(exc).__name__}: {exc}", location=path) from None
        if not streaming and len(self._ds) == 0:
            raise CorpusError(f"split {split!r} is empty", location=path)

    def _to_document(self, row: dict[str, Any], default_id: str) -> Document:
        text = row.get(self.text_field)
        if not isinstance(text, str) or not text.strip():
            raise CorpusError(f"row {default_id} has no non-empty {self.text_field!r}", location=self.path)
        doc_id = str(row[self.id_field]) if self.id_field and row.get(self.id_field) is not None else default_id
        title = row.get(self.title_field) if self.title_field else None
        return Document(self.name, doc_id, text, str(title) if title is not None else None)

    def sample(self, rng: random.Random) -> Document:
        if not self.streaming:
            index = rng.randrange(len(self._ds))
            return self._to_document(self._ds[index], f"{self.path}:{index}")
        seed = rng.randrange(2**31)
        for row in self._ds.shuffle(seed=seed, buffer_size=self.buffer_size).take(1):
            return self._to_document(row, f"{self.path}:stream-seed-{seed}")
        raise CorpusError("the stream is empty", location=self.path)
