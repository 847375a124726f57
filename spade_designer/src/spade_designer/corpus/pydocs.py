"""The embedded corpus: documentation of the running Python installation.

Two kinds of entries, neither needing a download:

* the pydoc topics (``pydoc_data.topics``: the language reference sections ``help()``
  shows);
* standard-library modules written in Python: the module docstring followed by the
  docstrings of its public classes and functions, read with ``ast`` from the source file
  (nothing is imported or executed).

Each entry is chunked into documents of ``chunk_words`` words. Sampling picks an entry
uniformly, then one of its chunks uniformly; entries (and chunks) with fewer than ``min_words`` words
are skipped by redrawing from the same generator, so a seed still fixes the result.
"""

from __future__ import annotations

import ast
import importlib.util
import random
import sys
from functools import lru_cache

from ..errors import CorpusError
from .base import Document, chunk_words

#: Modules whose files are data or platform stubs rather than documentation.
_SKIP_MODULES = frozenset(
    {"antigravity", "this", "idlelib", "lib2to3", "pydoc_data", "turtledemo", "tkinter",
     # finding it runs setuptools' distutils shim (0.45 s of imports) for a deprecated module
     "distutils"}
)


def _topic_entries() -> dict[str, str]:
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions strip pydoc_data
        return {}
    return dict(topics)


@lru_cache(maxsize=512)
def _module_text(name: str) -> str:
    spec = importlib.util.find_spec(name)
    origin = getattr(spec, "origin", None)
    if not origin or not origin.endswith(".py"):
        return ""
    try:
        with open(origin, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ""
    parts = [ast.get_docstring(tree) or ""]
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            doc = ast.get_docstring(node)
            if doc:
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                parts.append(f"{kind} {name}.{node.name}:\n{doc}")
    return "\n\n".join(p for p in parts if p)


class PyDocsCorpus:
    """Documentation of this Python; see the module docstring."""

    def __init__(self, *, chunk_words: int = 800, min_words: int = 40, max_draws: int = 64) -> None:
        if chunk_words < 1 or min_words < 0 or max_draws < 1:
            raise CorpusError("chunk_words and max_draws must be >= 1, min_words >= 0", location="pydocs")
        self.name = "pydocs"
        self.chunk_words = chunk_words
        self.min_words = min_words
        self.max_draws = max_draws
        self._topics = _topic_entries()
        modules = sorted(
            n for n in getattr(sys, "stdlib_module_names", ()) if not n.startswith("_") and n not in _SKIP_MODULES
        )
        # sorted keys: the entry list, hence every seed's draw, is independent of dict order
        self.entries: list[tuple[str, str]] = [("topic", t) for t in sorted(self._topics)] + [
            ("module", m) for m in modules
        ]
        if not self.entries:
            raise CorpusError("this Python ships neither pydoc topics nor stdlib sources", location="pydocs")

    def entry_text(self, kind: str, key: str) -> str:
        if kind == "topic":
            return self._topics.get(key, "")
        return _module_text(key)

    def sample(self, rng: random.Random) -> Document:
        for _ in range(self.max_draws):
            kind, key = self.entries[rng.randrange(len(self.entries))]
            text = self.entry_text(kind, key)
            if len(text.split()) < self.min_words:
                continue
            chunks = chunk_words(text, self.chunk_words)
            index = rng.randrange(len(chunks))
            if len(chunks[index].split()) < self.min_words:  # a short tail chunk: redraw
                continue
            title = f"Python {kind} {key}" + (f" (part {index + 1} of {len(chunks)})" if len(chunks) > 1 else "")
            return Document(self.name, f"{kind}:{key}#{index}", chunks[index], title)
        raise CorpusError(
            f"no entry with at least {self.min_words} words in {self.max_draws} draws", location="pydocs"
        )
