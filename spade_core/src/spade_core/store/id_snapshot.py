"""A snapshot of a SQLite store's admitted ids, kept next to the store file, so that a fresh
interpreter registers 100,000 environments from one small file read instead of an index
scan and a string split per id.

The snapshot is a cache, never a source of truth: it is used only when the version it was
taken at equals the store's current admitted-set version (``spade_admitted_set``, changed
by triggers in every transaction that changes which ids are admitted; both are read in one
read transaction), and any problem with it (missing, unreadable, malformed, unwritable
directory) just means the ids are read from the store as before.

File ``<store file>-ids``, UTF-8: a header line ``spade-id-snapshot 2 <version> <prefix>
<length>``, then the prefixed ids joined by newlines, a NUL, and the names joined by
newlines (ids and names contain neither character: see :data:`spade_core.names.NAME_RE`);
``<length>`` is the number of characters after the header line, so a file cut short or
grown is not read.
"""

from __future__ import annotations

import os
from itertools import repeat
from operator import itemgetter
from pathlib import Path

_MAGIC = "spade-id-snapshot 2"


def snapshot_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + "-ids")


def names_of(gym_ids: list[str], prefix: str) -> list[str]:
    """``<prefix><name>-v<N>`` -> ``<name>``: names never contain ``-v`` followed by the
    version (``NAME_RE`` allows no ``-``), so the last ``-v`` splits them. C-level
    iteration: no Python frame per id."""
    return list(map(str.removeprefix, map(itemgetter(0), map(str.rpartition, gym_ids, repeat("-v"))), repeat(prefix)))


def load(store_path: Path, version: str, prefix: str) -> tuple[list[str], list[str]] | None:
    """``(gym_ids, names)`` when the snapshot was taken at ``version`` with ``prefix``."""
    try:
        text = snapshot_path(store_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    header, sep, body = text.partition("\n")
    if not sep or header != f"{_MAGIC} {version} {prefix} {len(body)}":
        return None
    ids_text, sep, names_text = body.partition("\0")
    if not sep:
        return None
    gym_ids = ids_text.split("\n") if ids_text else []
    names = names_text.split("\n") if names_text else []
    if len(gym_ids) != len(names):
        return None
    return gym_ids, names


def save(store_path: Path, version: str, prefix: str, gym_ids: list[str], names: list[str]) -> None:
    """Write the snapshot atomically (a reader sees the old file or the new one); a
    directory the process cannot write to is not an error."""
    target = snapshot_path(store_path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    body = "\n".join(gym_ids) + "\0" + "\n".join(names)
    text = f"{_MAGIC} {version} {prefix} {len(body)}\n" + body
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
