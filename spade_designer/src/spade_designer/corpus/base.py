"""Grounding documents and what every corpus offers.

A corpus samples one :class:`Document` from a ``random.Random`` the caller seeds, so the
same seed gives the same document on any machine with the same corpus. The designer
truncates the text to its word budget and records :meth:`Document.ref` in the
environment's metadata.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from spade_core.metadata import DocumentRef


@dataclass(frozen=True)
class Document:
    corpus: str
    doc_id: str
    text: str
    title: str | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def words(self) -> int:
        return len(self.text.split())

    def ref(self) -> DocumentRef:
        return DocumentRef(corpus=self.corpus, doc_id=self.doc_id, title=self.title, sha256=self.sha256)

    def truncated(self, max_words: int) -> Document:
        """This document cut to at most ``max_words`` whitespace-separated words."""
        text = truncate_words(self.text, max_words)
        if text == self.text:
            return self
        return Document(self.corpus, self.doc_id, text, self.title)


@runtime_checkable
class Corpus(Protocol):
    name: str

    def sample(self, rng: random.Random) -> Document: ...


def truncate_words(text: str, max_words: int) -> str:
    """The first ``max_words`` words of ``text`` with the original spacing kept.

    Never longer than ``text``; the result has at most ``max_words`` words.
    """
    if max_words < 0:
        raise ValueError(f"max_words must be >= 0, got {max_words}")
    count = 0
    in_word = False
    for i, ch in enumerate(text):
        if ch.isspace():
            in_word = False
        elif not in_word:
            if count == max_words:
                return text[:i].rstrip()
            count += 1
            in_word = True
    return text


def chunk_words(text: str, words_per_chunk: int) -> list[str]:
    """Split ``text`` into consecutive chunks of ``words_per_chunk`` words, on paragraph
    boundaries where possible (a paragraph longer than a chunk is split on words)."""
    if words_per_chunk < 1:
        raise ValueError("words_per_chunk must be >= 1")
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for para in (p.strip() for p in text.split("\n\n")):
        if not para:
            continue
        n = len(para.split())
        if size and size + n > words_per_chunk:
            chunks.append("\n\n".join(current))
            current, size = [], 0
        while n > words_per_chunk:
            head = truncate_words(para, words_per_chunk)
            chunks.append(head)
            para = para[len(head) :].strip()
            n = len(para.split())
        if para:
            current.append(para)
            size += n
    if current:
        chunks.append("\n\n".join(current))
    return chunks
