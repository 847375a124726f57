"""The built-in description embedder: hashed character n-grams (lexical, not semantic).

A plugin of the ``spade`` entry-point group (``designer-embedding``) answering the
``spade_embed_texts`` hook *last*, so any installed model-based embedder wins. It needs no
download and no model: a text is lower-cased, its whitespace collapsed, and every
character n-gram (``NGRAM_SIZES``, taken over the text with a space at each end) is hashed
into one of ``DIMENSIONS`` signed buckets; counts are damped (``1 + log(count)``) and the
vector is scaled to unit length. Two descriptions score a high cosine when they share most
of their character runs — an edited copy does, a paraphrase with other words does not.

The vector of a text depends on that text only (no corpus statistics), so vectors computed
at different times are comparable.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
from spade_core.hookspecs import hookimpl

DIMENSIONS = 4096
NGRAM_SIZES = (3, 4, 5)


def _bucket(gram: str) -> tuple[int, float]:
    digest = int.from_bytes(hashlib.blake2b(gram.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
    return digest % DIMENSIONS, 1.0 if (digest >> 63) & 1 else -1.0


def embed_text(text: str) -> np.ndarray:
    """The unit vector of one text (all zeros for a blank text)."""
    norm = " " + " ".join(text.lower().split()) + " "
    grams = Counter(norm[i : i + n] for n in NGRAM_SIZES for i in range(len(norm) - n + 1))
    vec = np.zeros(DIMENSIONS, dtype=np.float64)
    if norm.strip():
        for gram, count in grams.items():
            slot, sign = _bucket(gram)
            vec[slot] += sign * (1.0 + np.log(count))
    length = np.linalg.norm(vec)
    return vec / length if length else vec


def embed_texts(texts: list[str]) -> list[list[float]]:
    """One unit vector per text, in order."""
    return [embed_text(t).tolist() for t in texts]


@hookimpl(trylast=True)
def spade_embed_texts(texts: list[str]) -> list[list[float]] | None:
    return embed_texts(list(texts))
