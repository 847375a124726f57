"""Vectors by environment id, answered by best score: what the code (MinHash) and the
description (embedding) novelty indexes share. Only the score differs between them."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np


class RowIndex:
    """One row vector per environment id, stacked into a matrix on first query after a
    change. Thread-safe: the designer validates batches concurrently against one index."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._known: set[str] = set()
        self._rows: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, env_id: object) -> bool:
        return env_id in self._known

    def add(self, env_id: str, row: np.ndarray) -> bool:
        """Index ``row`` under ``env_id``; ``False`` (and nothing changes) when the id is
        indexed already."""
        with self._lock:
            if env_id in self._known:
                return False
            self._known.add(env_id)
            self._ids.append(env_id)
            self._rows.append(row)
            self._matrix = None
        return True

    def best(self, score: Callable[[np.ndarray], np.ndarray], *, exclude: str | None = None) -> tuple[str, float] | None:
        """The id whose row scores highest under ``score`` (matrix -> one score per row),
        skipping ``exclude``, with its score; ``None`` when nothing else is indexed. Ties
        go to the earlier-indexed id."""
        with self._lock:
            if not self._ids:
                return None
            if self._matrix is None:
                self._matrix = np.vstack(self._rows)
            matrix, ids = self._matrix, list(self._ids)
        scores = score(matrix)
        for i in np.argsort(-scores, kind="stable"):
            if ids[i] != exclude:
                return ids[i], float(scores[i])
        return None
