r"""Hypothesis strategies of actions: generic families plus the domain plugin's own.

Generic families: boxed commands, tool-call JSON (well and badly formed), garbage, the
empty action, very long actions and arbitrary Unicode. Most generic actions come from a
fixed, precomputed pool (one cheap draw each: Hypothesis' per-draw cost dominates a fuzz
run), the rest are generated text so shrinking can still find the smallest bad string.
Reference solutions, when known, are mixed in so fuzzing also reaches deep states, and
so are the actions derived from the environment itself (:mod:`.mutations`: the command
templates it prints, near misses of its own actions); an example may start with a prefix
of the solution. The program is therefore built per environment, not once per domain.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from spade_core.actions import ToolCall, format_boxed, format_tool_calls
from spade_core.domains import Domain

from .probes import COMMANDS, GARBAGE, MAGIC

_WORDS = ("look", "go", "take", "use", "open", "north", "1", "2", "3", "0", "-1", "a", "x", "guess", "move", "up", "A B")
#: Numbers that break naive parsing and arithmetic.
_NUMBERS = ("nan", "NaN", "inf", "-inf", "1e309", "-0", "0.5", "99999999999999999999", "1_000", "0x10", "Ⅻ", "٣")
_UNICODE = ("é", "中文", "😀", "\u200b", "\u202e", "λ", "\x00", "\t", "\n", "\\", "{", "}", "\\boxed{", "ﷺ")


@functools.lru_cache(maxsize=8)
def generic_pool(long_chars: int = 4_000) -> tuple[str, ...]:
    """A deterministic pool of generic actions covering every family."""
    out: list[str] = ["", " ", "\n"]
    out += list(GARBAGE) + list(COMMANDS) + list(MAGIC)
    out += [format_boxed(w) for w in _WORDS]
    out += [format_boxed(f"{a} {b}") for a in _WORDS[:6] for b in _WORDS[6:10]]
    out += [format_boxed(u) for u in _UNICODE] + list(_UNICODE)
    out += [format_boxed(n) for n in _NUMBERS] + [format_boxed(f"guess {n}") for n in _NUMBERS[:6]]
    out += ["\\boxed{\\boxed{1}}", "\\boxed{1", "boxed{1}", "\\boxed{1}\\boxed{2}", "\\boxed{ }", "\\BOXED{1}"]
    out += [
        format_tool_calls([ToolCall("search", {"query": "weather"})]),
        format_tool_calls([ToolCall("get", {})]),
        format_tool_calls([ToolCall("set", {"key": "a", "value": 1}), ToolCall("list", {})]),
        format_tool_calls([ToolCall("answer", {"text": "42"})], answer="42"),
        '<tool_call>{"name": "x", "arguments": "not-an-object"}</tool_call>',
        '<tool_call>{"name": 5}</tool_call>',
        "<tool_call></tool_call>",
        "<tool_call>[1, 2]</tool_call>",
        "<answer></answer>",
        "<answer>" + "9" * 50 + "</answer>",
    ]
    out += [
        "a" * long_chars,
        format_boxed("b" * long_chars),
        format_boxed("1 " * (long_chars // 2)),
        "😀" * (long_chars // 2),
        "{" * long_chars,
        format_boxed("\\boxed{" * 50),
    ]
    return tuple(dict.fromkeys(out))


#: Characters generated text is made of: printable ASCII, whitespace, markup that action
#: parsers care about, and non-ASCII (accents, CJK, emoji, bidi and zero-width marks).
_ALPHABET = (
    [chr(c) for c in range(32, 127)]
    + ["\n", "\t", "\r", "\x00", "\\boxed{", "<tool_call>", "</tool_call>", "<answer>", "</answer>"]
    + ["é", "ß", "λ", "中", "文", "😀", "\u200b", "\u202e", "\ufeff", "ﷺ", "\U0010ffff"]
)
_TOOL_NAMES = ("search", "get", "set", "list", "answer", "")


_DIGITS = re.compile(r"\d+")


def _number(a: int, b: int) -> int:
    """Small numbers most of the time; boundary values (0, -1, multiples of common sizes),
    negatives and huge values often enough: that is where bounds bugs live."""
    kind = a % 8
    if kind == 0:
        return (0, 1, -1, 10, 12, 100, 1000, 2**31)[b % 8]
    if kind == 1:
        return -((a * 256 + b) % 1000)
    if kind == 2:
        return (a * 256 + b) * 10 ** (b % 15)
    return (a * 256 + b) % 200


def _text(chunk: bytes) -> str:
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in chunk)


@dataclass(frozen=True)
class ActionProgram:
    """Decodes a Hypothesis byte string into a list of actions.

    Each action takes an opcode byte (its family) and an operand (an index or a length
    followed by raw bytes). Zero bytes decode to the empty action and shorter operands to
    shorter text, so Hypothesis' byte shrinking yields the simplest failing actions. One
    ``binary`` draw per example keeps a 200-step fuzz run cheap (drawing every action
    separately costs about a millisecond each).
    """

    pool: tuple[str, ...]
    known: tuple[str, ...] = ()
    domain: tuple[str, ...] = ()
    #: Actions derived from this environment: its printed command templates and
    #: mutations of its own actions (:mod:`.mutations`).
    derived: tuple[str, ...] = ()
    #: The solution's action sequence per seed: an example may start with a prefix of it,
    #: so the actions after it meet the deep states only a good player reaches.
    plans: tuple[tuple[int, tuple[str, ...]], ...] = ()

    def decode(self, data: bytes, max_steps: int, seed: int | None = None) -> list[str]:
        out: list[str] = []
        i = 0
        n = len(data)
        plan = next((p for s, p in self.plans if s == seed), ())
        while i < n and len(out) < max_steps:
            op = data[i] % 13
            arg = data[i + 1] if i + 1 < n else 0
            i += 2
            if op == 11 and self.derived:
                out.append(self.derived[(arg * 256 + (data[i] if i < n else 0)) % len(self.derived)])
                i += 1
            elif op == 12 and plan:
                out.extend(plan[: arg % len(plan) + 1][: max_steps - len(out)])
            elif op in (3, 4) and self.known:
                out.append(self.known[arg % len(self.known)])
            elif op in (5, 6) and self.domain:
                out.append(self.domain[arg % len(self.domain)])
            elif op == 7:  # generated text
                chunk = data[i : i + arg % 24]
                i += len(chunk)
                out.append(_text(chunk))
            elif op == 8:  # generated boxed command
                chunk = data[i : i + arg % 12]
                i += len(chunk)
                out.append(format_boxed(_text(chunk)))
            elif op == 9:  # generated tool call, sometimes malformed
                chunk = data[i : i + arg % 12]
                i += len(chunk)
                name = _TOOL_NAMES[arg % len(_TOOL_NAMES)] or _text(chunk[:4])
                if arg % 5 == 4:
                    out.append("<tool_call>{" + _text(chunk) + "</tool_call>")
                else:
                    args = {_text(chunk[:2]) or "k": _text(chunk[2:]) if arg % 2 else len(chunk)}
                    out.append("<tool_call>" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "</tool_call>")
            elif op == 10:  # a known action with its numbers changed, or a boxed number
                value = _number(arg, data[i] if i < n else 0)
                i += 1
                if self.known:
                    base = self.known[arg % len(self.known)]
                    out.append(_DIGITS.sub(str(value), base, count=1) if _DIGITS.search(base) else base)
                else:
                    out.append(format_boxed(str(value)))
            else:
                out.append(self.pool[(op * 256 + arg) % len(self.pool)] if op else self.pool[arg % len(self.pool)])
        return out[:max_steps]


#: Fewest examples drawn from a domain's strategy, whatever the run's example count.
MIN_DOMAIN_SAMPLES = 32


def domain_samples(domain: Domain | None, count: int = MIN_DOMAIN_SAMPLES, seed: int = 0) -> tuple[str, ...]:
    """Up to ``count`` distinct actions drawn from the domain plugin's strategy (cached).

    Each is one generated example of the strategy, seeded with ``seed``: Hypothesis starts
    from the simplest value and then draws across the whole strategy, so a plugin's list
    of odd inputs is reached (a single derandomised draw only ever gives the simplest
    one). A strategy that can make fewer distinct values gives fewer.
    """
    if domain is None or domain.fuzz_strategy is None:
        return ()
    key = (domain.name, count, seed)
    cached = _DOMAIN_CACHE.get(key)
    if cached is not None:
        return cached
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    found: dict[str, None] = {}

    @settings(
        max_examples=count, database=None, deadline=None,
        suppress_health_check=list(HealthCheck), phases=(Phase.generate,),
    )
    @hypothesis_seed(seed)
    @given(domain.fuzz_strategy())
    def draw(x: str) -> None:
        if isinstance(x, str):
            found.setdefault(x, None)

    draw._hypothesis_internal_database_key = None  # type: ignore[attr-defined]
    draw()
    samples = tuple(found)
    _DOMAIN_CACHE[key] = samples
    return samples


_DOMAIN_CACHE: dict[tuple[str, int, int], tuple[str, ...]] = {}


def program(
    *,
    domain: Domain | None = None,
    known: Sequence[str] = (),
    long_chars: int = 4_000,
    derived: Sequence[str] = (),
    plans: Sequence[tuple[int, Sequence[str]]] = (),
    domain_count: int = MIN_DOMAIN_SAMPLES,
    seed: int = 0,
) -> ActionProgram:
    """The action program of one fuzz run: the generic pool, ``domain_count`` samples of
    the domain's strategy (more examples, more of them), and what this environment gives
    (its solution's actions and plans, derived actions)."""
    return ActionProgram(
        pool=generic_pool(long_chars),
        known=tuple(dict.fromkeys(known)),
        domain=domain_samples(domain, max(MIN_DOMAIN_SAMPLES, domain_count), seed),
        derived=tuple(dict.fromkeys(derived)),
        plans=tuple((seed, tuple(plan)) for seed, plan in plans if plan),
    )
