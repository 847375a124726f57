"""Near-duplicate detection of environment code: MinHash over normalised code tokens.

Normalisation makes the signature blind to the edits that do not make a new task:
comments and docstrings are dropped, identifiers are renamed to their order of first
appearance (``v0, v1, ...``; keywords and builtins are kept), numbers become ``NUM`` and
string literals are case-folded with whitespace collapsed. Shingles are runs of
``shingle_size`` tokens; the estimated Jaccard similarity of two signatures is the
fraction of equal MinHash slots.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .descriptions import DescriptionIndex, Embedder
from .row_index import RowIndex

_PRIME = np.uint64(4_294_967_311)  # smallest prime above 2**32
_KEEP = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"self", "cls", "super"}
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER}


def code_tokens(source: str) -> list[str]:
    """Normalised tokens of ``source``; falls back to whitespace words if it does not tokenize."""
    names: dict[str, str] = {}
    out: list[str] = []
    statement_start = True  # a string here is a docstring or a bare string statement
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                statement_start = True
                continue
            if tok.type in _SKIP:
                continue
            if tok.type == tokenize.STRING and statement_start:
                continue
            statement_start = False
            if tok.type == tokenize.NAME:
                out.append(tok.string if tok.string in _KEEP else names.setdefault(tok.string, f"v{len(names)}"))
            elif tok.type == tokenize.NUMBER:
                out.append("NUM")
            elif tok.type == tokenize.STRING:
                out.append(" ".join(tok.string.lower().split()))
            else:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source.split()
    return out


def shingles(tokens: list[str], size: int) -> set[str]:
    if len(tokens) <= size:
        return {" ".join(tokens)}
    return {"\x1f".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def _hash32(items: Iterable[str]) -> np.ndarray:
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=4).digest(), "little") for s in items),
        dtype=np.uint64,
    )


@dataclass(frozen=True)
class MinHasher:
    """Signatures of ``permutations`` slots; the same parameters give comparable signatures."""

    permutations: int = 128
    shingle_size: int = 5
    seed: int = 1

    def __post_init__(self) -> None:
        rng = np.random.default_rng(self.seed)
        object.__setattr__(self, "_a", rng.integers(1, 2**31, size=self.permutations, dtype=np.uint64))
        object.__setattr__(self, "_b", rng.integers(0, 2**32, size=self.permutations, dtype=np.uint64))

    def signature(self, source: str) -> np.ndarray:
        x = _hash32(shingles(code_tokens(source), self.shingle_size))
        # a < 2**31 and x < 2**32 keep a*x + b below 2**64: no overflow in uint64.
        table = (self._a[:, None] * x[None, :] + self._b[:, None]) % _PRIME  # type: ignore[attr-defined]
        return table.min(axis=1)


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a == b))


class NoveltyIndex:
    """What novelty is judged against: MinHash signatures of known environments' code, by
    id (cached by code hash), and, when an embedder is given, their descriptions'
    embeddings (:class:`~.descriptions.DescriptionIndex`).

    Thread-safe: the designer validates batches concurrently against one index.
    """

    def __init__(self, hasher: MinHasher | None = None, *, embedder: Embedder | None = None) -> None:
        self.hasher = hasher or MinHasher()
        self.descriptions = DescriptionIndex(embedder) if embedder is not None else None
        self._signatures = RowIndex()
        self._by_hash: dict[str, np.ndarray] = {}
        self._synced: dict[tuple[int, str], int] = {}

    def __len__(self) -> int:
        return len(self._signatures)

    def __contains__(self, env_id: object) -> bool:
        return env_id in self._signatures

    def peers(self) -> NoveltyIndex:
        """An empty index comparable with this one (same hasher and embedder): a batch's
        candidates, checked against each other without entering this index."""
        return NoveltyIndex(self.hasher, embedder=self.descriptions.embedder if self.descriptions is not None else None)

    def add(self, env_id: str, source: str, code_hash: str | None = None, *, description: str = "") -> None:
        self._add(env_id, source, code_hash)
        if self.descriptions is not None and description:
            self.descriptions.add([(env_id, description)])

    def _add(self, env_id: str, source: str, code_hash: str | None) -> bool:
        sig = self._by_hash.get(code_hash) if code_hash else None
        if sig is None:
            sig = self.hasher.signature(source)
            if code_hash:
                self._by_hash[code_hash] = sig
        return self._signatures.add(env_id, sig)

    def sync(self, store: object) -> int:
        """Add every environment of an ``EnvStore`` not indexed yet; returns how many were added.

        Environments are only ever added to a store, so when its count has not changed
        since the last sync nothing is read (a count is one cheap query; listing decodes
        every document). New descriptions are embedded in one call.
        """
        key = (id(store), str(getattr(store, "url", "")))
        count = store.count()  # type: ignore[attr-defined]
        if self._synced.get(key) == count:
            return 0
        added: list[tuple[str, str]] = []
        for meta in store.find():  # type: ignore[attr-defined]
            if meta.id in self._signatures:
                continue
            if self._add(meta.id, store.get_source(meta.id), meta.code_hash or None):  # type: ignore[attr-defined]
                added.append((meta.id, meta.description))
        if self.descriptions is not None:
            self.descriptions.add([(i, d) for i, d in added if d])
        self._synced[key] = count
        return len(added)

    def nearest(self, source: str, *, exclude: str | None = None) -> tuple[str, float] | None:
        """The most similar indexed environment and its estimated similarity (``None`` if empty)."""
        return self.nearest_signature(self.hasher.signature(source), exclude=exclude)

    def nearest_signature(self, sig: np.ndarray, *, exclude: str | None = None) -> tuple[str, float] | None:
        return self._signatures.best(lambda matrix: (matrix == sig[None, :]).mean(axis=1), exclude=exclude)
