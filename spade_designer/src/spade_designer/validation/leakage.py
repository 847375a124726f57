r"""Does a hint give the solution away?

A hint *leaks* when every payload of the reference solution (the text inside
``\boxed{...}`` or ``<answer>...</answer>``, or a string solution) appears in the hint as a
contiguous run of word tokens, case-insensitively. Tool calls without an answer carry no
payload. Payloads with fewer than two word characters in total are too short to judge.
"""

from __future__ import annotations

import re

from spade_core.actions import find_boxed

_TOKEN = re.compile(r"\w+", re.UNICODE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def payloads(solution: list[str] | str) -> list[str]:
    actions = [solution] if isinstance(solution, str) else list(solution)
    out: list[str] = []
    for a in actions:
        boxed = find_boxed(a)
        answers = _ANSWER.findall(a)
        if boxed:
            out.append(boxed[-1])
        elif answers:
            out.append(answers[-1])
        elif "<tool_call>" not in a:
            out.append(a)
    return out


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def leaked_payloads(hint: str, solution: list[str] | str) -> list[str] | None:
    """The payloads the hint reveals, when it reveals all of them; ``None`` when it does not."""
    hint_tokens = tokens(hint)
    pays = [p for p in payloads(solution) if tokens(p)]
    if not pays or sum(len("".join(tokens(p))) for p in pays) < 2:
        return None
    if all(_contains(hint_tokens, tokens(p)) for p in pays):
        return pays
    return None
