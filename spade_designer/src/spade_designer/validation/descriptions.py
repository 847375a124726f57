"""Near-duplicate detection of environment descriptions by embedding.

An *embedder* maps texts to vectors (``list[str] -> list[list[float]] | None``; ``None``
means "no embedding available"). The production embedder asks the plugins
(:func:`plugin_embedder`: the ``spade_embed_texts`` hook); :class:`DescriptionIndex` keeps
unit-length vectors by environment id and answers the most similar one by cosine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins

import numpy as np
from spade_core.errors import PluginError

from .row_index import RowIndex

Embedder = Callable[[list[str]], "list[list[float]] | None"]


def plugin_embedder(plugins: SpadePlugins | None = None) -> Embedder:
    """An embedder that calls the ``spade_embed_texts`` hook of ``plugins`` (default: the
    loaded plugins, looked up on each call so a plugin registered later is used)."""

    def embed(texts: list[str]) -> list[list[float]] | None:
        from spade_core.plugins import get_plugins

        pm = (plugins if plugins is not None else get_plugins()).pm
        hook = getattr(pm.hook, "spade_embed_texts", None)
        if hook is None or not texts:
            return None
        return hook(texts=list(texts))

    return embed


def _unit_rows(vectors: Sequence[Sequence[float]], count: int) -> np.ndarray:
    """Vectors as a float matrix of unit rows; a plugin's malformed answer is an error."""
    if len(vectors) != count:
        raise PluginError(f"the embedding plugin returned {len(vectors)} vectors for {count} texts")
    try:
        matrix = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PluginError(f"the embedding plugin returned vectors of unequal length or non-numbers: {exc}") from None
    if matrix.ndim != 2 or not np.isfinite(matrix).all():
        raise PluginError("the embedding plugin must return one finite vector of floats per text")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class DescriptionIndex:
    """Unit-length description embeddings by environment id (thread-safe)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._rows = RowIndex()

    def __len__(self) -> int:
        return len(self._rows)

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """Unit rows for ``texts``, or ``None`` when no embedder answers."""
        vectors = self.embedder(texts)
        return None if vectors is None else _unit_rows(vectors, len(texts))

    def add(self, items: list[tuple[str, str]]) -> None:
        """Index ``(env_id, description)`` pairs (one embedder call); ids already indexed
        are skipped."""
        new = [(i, d) for i, d in items if i not in self._rows]
        if not new:
            return
        rows = self.embed([d for _, d in new])
        if rows is None:
            return
        for (env_id, _), row in zip(new, rows, strict=True):
            self._rows.add(env_id, row)

    def nearest(self, vector: np.ndarray, *, exclude: str | None = None) -> tuple[str, float] | None:
        """The indexed description most similar to a unit ``vector`` (cosine), or ``None``."""

        def cosine(matrix: np.ndarray) -> np.ndarray:
            if matrix.shape[1] != vector.shape[0]:
                raise PluginError(
                    f"the embedding plugin changed its vector size ({matrix.shape[1]} indexed, {vector.shape[0]} now)"
                )
            return matrix @ vector

        return self._rows.best(cosine, exclude=exclude)
