"""An exact, fast deep copy of tool-use state (standard library only).

Tool-use environments keep their state as plain JSON-like values (dicts, lists, strings,
numbers, booleans, ``None``), and the base class snapshots it before every tool call so a
failing tool can be rolled back. :func:`copy.deepcopy` is general and therefore slow on
such trees (it dispatches per object through a table and keeps every original alive);
:func:`state_copy` walks exactly those types directly and hands anything else to
:func:`copy.deepcopy` with the same memo, so the result is always what ``deepcopy`` would
give:

* atoms (``str``, ``int``, ``float``, ``bool``, ``None``) are shared, as ``deepcopy``
  shares them;
* a ``dict`` or ``list`` (exact type, not a subclass) becomes a new container of copies;
  a container reached twice (aliasing, cycles) is copied once and the copy is reached
  twice, as with ``deepcopy``'s memo;
* any other value (tuples, sets, subclasses, objects) goes to ``copy.deepcopy(value,
  memo)``, sharing the memo, so aliasing between both kinds of values is kept too.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["state_copy"]

# Exact types that deepcopy returns unchanged and that hold no references.
_ATOMS = frozenset({str, int, float, bool, type(None)})


def state_copy(value: Any) -> Any:
    """A deep copy of ``value`` equal (values, aliasing and types) to ``copy.deepcopy``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    return _copy(value, {})


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    # Unlike deepcopy, dicts and lists need no keep-alive entry in the memo: each one is
    # reachable from the root the caller holds for the whole copy, so no id is reused.
    kind = type(value)
    if kind is dict:
        key = id(value)
        done = memo.get(key)
        if done is not None:
            return done
        out: dict[Any, Any] = {}
        memo[key] = out
        for k, v in value.items():
            tk = type(k)
            tv = type(v)
            out[k if tk in _ATOMS else _copy(k, memo)] = v if tv in _ATOMS else _copy(v, memo)
        return out
    if kind is list:
        key = id(value)
        done = memo.get(key)
        if done is not None:
            return done
        items: list[Any] = []
        memo[key] = items
        for v in value:
            items.append(v if type(v) in _ATOMS else _copy(v, memo))
        return items
    if kind in _ATOMS:
        return value
    # Anything else: the general algorithm, on the same memo so shared values stay shared.
    return copy.deepcopy(value, memo)

