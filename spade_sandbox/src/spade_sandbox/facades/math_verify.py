"""``import math_verify`` inside the sandbox: ``parse`` and ``verify`` with the library's
signatures, whose parsed answers are opaque.

The real ``parse`` returns sympy expressions, and a sympy expression turns a string
argument into code through ``sympify``, which runs the interpreter's ``eval`` with the real
builtins: ``parse("$x$")[0].equals("__import__('os')...")`` would run any Python in the
worker, past the guard. Here ``parse`` returns a :class:`Parsed` that shows only the text
of what was extracted; the expressions stay in this module, reached by ``verify``.

A worker cannot import from disk, and the library imports some modules on first use
(antlr's ``LL1Analyzer`` at the first LaTeX parse, sympy's solvers and printers...): this
module parses and compares a spread of answer forms when it is imported, in the zygote,
so that workers forked afterwards hold them all.

The library's own ``signal.alarm`` timeouts are off: the sandbox's per-call time and CPU
limits bound a slow parse or comparison, as they bound any environment code.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import math_verify as _real
import math_verify.grader as _grader
import math_verify.parser as _parser
from math_verify import ExprExtractionConfig, LatexExtractionConfig, LatexNormalizationConfig, StringExtractionConfig

__all__ = ["ExprExtractionConfig", "LatexExtractionConfig", "LatexNormalizationConfig", "Parsed",
           "StringExtractionConfig", "parse", "verify"]

# The library warns once that it runs without timeouts; a worker has no one to read it.
_parser.TIMEOUT_WARNING_SHOWN = True
_grader.TIMEOUT_WARNING_SHOWN = True

_CONFIGS = (ExprExtractionConfig, LatexExtractionConfig, StringExtractionConfig)
_EXPRESSIONS: weakref.WeakKeyDictionary[Parsed, list[Any]] = weakref.WeakKeyDictionary()


class Parsed:
    """What :func:`parse` extracted: its text (``str(p)``, ``p[i]``, ``len(p)``, truth),
    nothing that reaches the expressions themselves."""

    __slots__ = ("__weakref__", "texts")

    def __init__(self, texts: tuple[str, ...]) -> None:
        self.texts = texts

    def __len__(self) -> int:
        return len(self.texts)

    def __bool__(self) -> bool:
        return bool(self.texts)

    def __getitem__(self, index: int) -> str:
        return self.texts[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts)

    def __repr__(self) -> str:
        return repr(list(self.texts))

    __str__ = __repr__


def parse(pred: str, extraction_config: Sequence[Any] | None = None, fallback_mode: str = "first_match",
          extraction_mode: str = "any_match") -> Parsed:
    """``math_verify.parse`` of ``pred``; the configurations given must be the library's."""
    if not isinstance(pred, str):
        raise TypeError(f"parse takes a string, got {type(pred).__name__}")
    configs = list(extraction_config) if extraction_config is not None else [LatexExtractionConfig(), ExprExtractionConfig()]
    if not all(isinstance(c, _CONFIGS) for c in configs):
        raise TypeError("extraction_config holds only LatexExtractionConfig, ExprExtractionConfig or StringExtractionConfig")
    if fallback_mode not in ("first_match", "no_fallback") or extraction_mode not in ("first_match", "any_match"):
        raise ValueError("fallback_mode is first_match or no_fallback; extraction_mode first_match or any_match")
    found = _real.parse(pred, extraction_config=configs, fallback_mode=fallback_mode, extraction_mode=extraction_mode,
                        parsing_timeout=None)
    out = Parsed(tuple(str(x) for x in found))
    _EXPRESSIONS[out] = list(found)
    return out


def _expressions(value: Parsed | str) -> list[Any]:
    if isinstance(value, Parsed):
        return _EXPRESSIONS.get(value, [])
    if isinstance(value, str):
        return _EXPRESSIONS[parse(value)] if value else []
    raise TypeError(f"verify compares what parse returned (or strings), got {type(value).__name__}")


def verify(gold: Parsed | str, target: Parsed | str, float_rounding: int = 6, numeric_precision: int = 15,
           strict: bool = True) -> bool:
    """``math_verify.verify``: whether ``target`` matches any of ``gold``'s answers."""
    return bool(_real.verify(_expressions(gold), _expressions(target), float_rounding=int(float_rounding),
                             numeric_precision=int(numeric_precision), strict=bool(strict), timeout_seconds=None))



#: Answer forms parsed and compared once at import (see the module docstring).
WARM_UP = ("$\\frac{1}{2}$", "0.5", "$\\sqrt{2}$", "$x^2 + 1$", "$2x + 3 = 5$", "$[1, 2]$", "$\\{1, 2\\}$",
           "$(1, 2]$", "$10\\%$", "$\\pi$", "$\\begin{pmatrix} 1 & 2 \\end{pmatrix}$", "$\\text{yes}$",
           "\\boxed{3/4}", "The answer is 12.", "$e^{i\\pi}$", "$\\log_2 8$", "$\\sin(x)$", "$a \\le b$")


def _warm_up() -> None:
    import antlr4.LL1Analyzer  # noqa: F401  (imported by antlr on a parser's first error recovery)

    parsed = [parse(text) for text in WARM_UP]
    for a in parsed:
        for b in parsed[:6]:
            verify(a, b)
        str(a)


_warm_up()
