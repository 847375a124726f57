r"""Actions derived from the environment itself: its command templates and near misses.

Generic probes rarely hit an environment's own grammar: a bug behind ``\boxed{jump 3}``
shows only to actions that start with ``jump``. So the fuzzer also draws on what the
environment says and does:

* **templates**: every ``\boxed{...}`` the environment prints (the intro text's
  ``\boxed{move N}``, an error message's usage line), sent literally and with its
  placeholders (``N``, ``<row>``, ``[x]``, ``{dir}``...) filled with numbers;
* **mutations** of its own actions (the solution's, the templates'): an argument
  dropped or added, numbers changed (neighbours, zero, negatives, larger and huge ones:
  an agent overshooting the goal), tokens reordered or repeated, letters swapped for
  Unicode look-alikes, digits for digit-like Unicode characters (``²``, ``①`` pass
  ``str.isdigit`` and fail ``int``; ``٣``, ``１`` pass ``int`` and break ``ord`` arithmetic),
  odd case and spacing; for tool calls, an argument dropped, added, retyped or renumbered.

Everything here is deterministic: the same environment gives the same actions, so a
report stays reproducible from its inputs.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

from spade_core.actions import find_boxed, format_boxed

#: How many templates one environment's text may contribute.
MAX_TEMPLATES = 24
#: How many mutations one action may give (a boxed command, a message of tool calls:
#: a tool message usually ends its turn, so each costs an episode of its own).
MAX_PER_ACTION = 24
MAX_PER_TOOL_MESSAGE = 8

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
#: Tokens that stand for an argument in a printed command template.
_PLACEHOLDER = re.compile(
    r"<[^<>\s]{1,20}>|\[[^\[\]\s]{1,20}\]|\{[^{}\s]{1,20}\}|(?<![\w])(?:[A-Z]|[a-z]|N\d?|X\d?|Y\d?|num|number|n\d)(?![\w])"
)
#: Digit-like characters: the first two fail ``int()``, the others are decimal digits of
#: other scripts (``int()`` accepts them, arithmetic on ``ord()`` does not).
_DIGIT_LIKE = {
    "superscript": str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"),
    "circled": str.maketrans("0123456789", "⓪①②③④⑤⑥⑦⑧⑨"),
    "arabic-indic": str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"),
    "fullwidth": str.maketrans("0123456789", "０１２３４５６７８９"),
}
#: Latin letters and a Cyrillic or Greek character that looks the same.
_LOOKALIKE = str.maketrans("aceopxyiABCEHKMOPTX", "асеорхуіАВСЕНКМОРТХ")
_FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in map(chr, range(0x21, 0x7F))}


def templates(texts: Iterable[str], limit: int = MAX_TEMPLATES) -> list[str]:
    r"""Distinct ``\boxed{...}`` commands printed in ``texts``, literal and with their
    placeholders filled in (at most ``limit`` templates)."""
    found: dict[str, None] = {}
    for text in texts:
        for payload in find_boxed(text):
            payload = payload.strip()
            if payload and len(payload) <= 80:
                found.setdefault(payload, None)
            if len(found) >= limit:
                break
        if len(found) >= limit:
            break
    out: list[str] = []
    for payload in found:
        out.append(format_boxed(payload))
        for value in ("1", "0", "-1", "99"):
            filled = _PLACEHOLDER.sub(functools.partial(_keep_verb, value=value), payload)
            out.append(format_boxed(filled))
    return list(dict.fromkeys(out))


def _keep_verb(match: re.Match[str], value: str) -> str:
    # A one-letter verb at the start ("a" in "a 3") is a command, not a placeholder.
    return match.group(0) if match.start() == 0 and len(match.group(0)) == 1 and match.string[1:2] == " " else value


def _digits_as(payload: str, table: dict[int, int]) -> str:
    """``payload`` with the digits of its numbers written with ``table``'s characters."""
    return _NUMBER.sub(lambda m: m.group(0).translate(table), payload)


def _number_variants(n: int) -> list[str]:
    """Neighbours, boundaries and the sizes that go past a goal or an index."""
    values = [n + 1, n - 1, 0, -1, -n, 2 * n + 1, 10 * n + 10, 10**6, 10**18, 2**63]
    return [str(v) for v in dict.fromkeys(values) if v != n]


def boxed_mutations(action: str) -> list[str]:
    r"""Near misses of one ``\boxed{...}`` command (see the module docstring)."""
    payloads = find_boxed(action)
    if not payloads:
        return []
    payload = payloads[-1].strip()
    tokens = payload.split()
    if not tokens:
        return []
    verb, args = tokens[0], tokens[1:]
    numbers = list(_NUMBER.finditer(payload))
    # Most telling first: a cap keeps the head of every action's list.
    first: list[str] = []  # argument dropped, number past the goal, digit-like characters
    rest: list[str] = []
    if args:
        first.append(verb)  # every argument dropped
        rest.append(" ".join(tokens[:-1]))  # the last one dropped
        rest += [" ".join([verb] + args[:i] + args[i + 1 :]) for i in range(len(args))]
        rest.append(" ".join([verb] + args[::-1]))  # reordered
        rest.append(" ".join(args + [verb]))
    if numbers:
        head = numbers[0]
        variants = [payload[: head.start()] + v + payload[head.end() :] for v in _number_variants(int(head.group(0)))]
        first += variants[:1]  # one more: past the goal by a step
        first.append(_digits_as(payload, _DIGIT_LIKE["superscript"]))
        first += variants[5:6]  # far past it
        rest += variants[1:5] + variants[6:]
        rest += [_digits_as(payload, table) for table in list(_DIGIT_LIKE.values())[1:]]
        rest.append(_NUMBER.sub(lambda m: m.group(0) + ".5", payload))
    else:
        first.append(f"{verb} ²")
        rest.append(f"{verb} -1")
    rest.append(payload + " 1")  # an argument added
    rest.append(payload + " " + payload)  # repeated
    rest.append(verb.translate(_LOOKALIKE) + payload[len(verb) :])
    rest.append("".join(_FULLWIDTH.get(c, c) for c in verb) + payload[len(verb) :])
    rest.append(payload.upper() if payload != payload.upper() else payload.lower())
    rest.append("  " + "\t ".join(tokens) + "  ")
    rest.append(verb + "\u200b" + payload[len(verb) :])
    out = first + rest
    mutated = [format_boxed(p) for p in dict.fromkeys(out) if p != payload]
    return mutated[:MAX_PER_ACTION]


_TOOL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def tool_mutations(action: str) -> list[str]:
    """Near misses of a message of tool calls: each variant changes the first call."""
    tags = list(_TOOL_TAG.finditer(action))
    if not tags:
        return []
    first_tag = tags[0]
    try:
        call = json.loads(first_tag.group(1))
    except json.JSONDecodeError:
        return []
    if not isinstance(call, dict) or not isinstance(call.get("arguments", {}), dict):
        return []
    name = call.get("name")
    args = dict(call.get("arguments") or {})
    # Most telling first (the cap keeps the head): an argument dropped, a number past
    # its range, a value of the wrong type, an argument the tool does not take.
    first: list[dict[str, object]] = []
    rest: list[dict[str, object]] = []
    for key in list(args)[:4]:
        first.append({"name": name, "arguments": {k: v for k, v in args.items() if k != key}})
        value = args[key]
        if isinstance(value, bool):
            retyped: list[object] = [str(value).lower(), not value]
        elif isinstance(value, int | float):
            retyped = [value * 10 + 10, str(value), -value, 10**18, 0]
        elif isinstance(value, str):
            retyped = [1, "", value.translate(_LOOKALIKE), value + value, value.upper()]
        else:
            retyped = ["x", None]
        first.append({"name": name, "arguments": {**args, key: retyped[0]}})
        rest += [{"name": name, "arguments": {**args, key: v}} for v in retyped[1:]]
    first.append({"name": name, "arguments": {**args, "unexpected": 1}})
    rest.append({"name": name, "arguments": {}})
    if isinstance(name, str) and name:
        rest.append({"name": name.translate(_LOOKALIKE), "arguments": args})
    out = []
    for v in first + rest:
        tag = "<tool_call>" + json.dumps(v, ensure_ascii=False) + "</tool_call>"
        out.append(action[: first_tag.start()] + tag + action[first_tag.end() :])
    return list(dict.fromkeys(o for o in out if o != action))[:MAX_PER_TOOL_MESSAGE]


def mutations(action: str) -> list[str]:
    """Near misses of one action, whatever its format."""
    return boxed_mutations(action) or tool_mutations(action)


def derived_actions(known: Iterable[str], texts: Iterable[str], limit: int = 128) -> list[str]:
    """Templates from ``texts`` and mutations of ``known`` and of the templates: distinct,
    at most ``limit``, interleaved so that every source contributes before the cap."""
    sources = list(dict.fromkeys(known))
    temps = templates(texts)
    groups = [temps] + [mutations(a) for a in dict.fromkeys(sources + temps)]
    seen = set(sources)
    out: list[str] = []
    depth = max((len(g) for g in groups), default=0)
    for i in range(depth):
        for g in groups:
            if i < len(g) and g[i] not in seen:
                seen.add(g[i])
                out.append(g[i])
                if len(out) >= limit:
                    return out
    return out
