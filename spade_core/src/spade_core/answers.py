"""The one numeric comparison of answers: every scorer that compares a number an agent gave
with the number it should have given goes through :func:`numbers_match`.

A comparison written ``abs(got - expected) > tolerance: wrong`` passes ``nan``, since every
comparison with NaN is false; one written ``< tolerance: right`` fails ``nan`` but passes
``inf`` against an infinite gold, and ``float("1e999")`` is infinite. Here a number is
finite or it is not a number at all: :func:`finite_number` reads ``nan``, ``inf``,
``Infinity`` and values past a float's range as no number, so a reply cannot fake a right
answer with them, whichever way a scorer writes its test. Standard library only (plugins
and the sandbox's checkers import it).
"""

from __future__ import annotations

import math

__all__ = ["MAX_NUMBER_CHARS", "finite_number", "names_non_finite", "numbers_match"]

#: Longest text read as a number: ``float()`` of a longer digit string is slow and no
#: answer needs more digits than this.
MAX_NUMBER_CHARS = 400


def finite_number(value: object) -> float | None:
    """``value`` as a finite float: an int or float, or a text ``float()`` reads (surrounding
    whitespace allowed); ``None`` for anything else, NaN, the infinities and numbers beyond
    a float's range included. Booleans are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            number = float(value)
        except OverflowError:
            return None
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if not text or len(text) > MAX_NUMBER_CHARS:
            return None
        try:
            number = float(text)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def names_non_finite(value: object) -> bool:
    """Whether ``value`` reads as a number that is not finite (``nan``, ``-inf``,
    ``Infinity``, ``1e999``): never a right answer, whatever a scorer's own test would say."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if not isinstance(value, str) or len(value.strip()) > MAX_NUMBER_CHARS:
        return False
    try:
        return not math.isfinite(float(value.strip()))
    except ValueError:
        return False


def numbers_match(got: object, expected: object, *, abs_tol: float = 0.0, rel_tol: float = 0.0) -> bool:
    """Whether ``got`` and ``expected`` are both finite numbers (:func:`finite_number`) within
    ``abs_tol`` or ``rel_tol`` of each other (``math.isclose``); ``False`` when either is not."""
    a, b = finite_number(got), finite_number(expected)
    if a is None or b is None:
        return False
    return math.isclose(a, b, abs_tol=abs_tol, rel_tol=rel_tol)
