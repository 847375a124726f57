r"""Privileged hints: the model reads an environment's source and writes 1-3 sentences.

A hint must help without giving the answer away (a leaked answer trains the designer
toward environments that are unsolvable without it). The leakage check runs the
environment in the sandbox at ``settings.check_seeds``, takes its ``solution()`` and
first observation, and rejects a hint that

* contains every payload of the solution at some seed (the validation pipeline's rule,
  :func:`spade_designer.validation.leakage.leaked_payloads`), or
* names a *key value*: a word or number of the solution that the player cannot see in
  the first observation and that changes with the seed (a hidden secret such as the
  code of a vault). Values common to the solutions of every checked seed are strategy,
  not secrets ("try 555 first"), and are allowed.

A rejected hint is regenerated up to ``settings.attempts`` times; each attempt is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .validation.runner import EnvRunner

from spade_core.errors import SpadeError

from .config import HintSettings
from .llm.base import LLMBackend
from .prompts import hint_conversation
from .records import HintAttempt, HintResult
from .validation.leakage import leaked_payloads, payloads, tokens


@dataclass(frozen=True)
class SolutionProbe:
    """What the leakage check knows about one seed of an environment."""

    seed: int
    observation: str
    solution: list[str] | str


@dataclass(frozen=True)
class HintRequest:
    source: str
    skill: str | None = None
    class_name: str | None = None
    allowed_modules: tuple[str, ...] = ()


ProbeFn = Callable[[HintRequest, Sequence[int]], list[SolutionProbe]]


def sandbox_probe(pool: EnvRunner) -> ProbeFn:
    """A probe that runs the environment in ``pool`` (a ``spade_sandbox.SandboxPool``)."""

    def probe(request: HintRequest, seeds: Sequence[int]) -> list[SolutionProbe]:
        handle = pool.spawn(request.source, allowed_modules=request.allowed_modules, class_name=request.class_name)
        try:
            out = []
            for seed in seeds:
                obs, _info = pool.reset(handle, seed)
                out.append(SolutionProbe(seed, obs, pool.call(handle, "solution")))
            return out
        finally:
            pool.close_env(handle)

    return probe


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FENCED = re.compile(r"```.*?(```|$)", re.DOTALL)
_LABEL = re.compile(r"^\s*(\*\*)?(privileged\s+)?hint(\*\*)?\s*[:\-]\s*(\*\*)?", re.IGNORECASE)


def clean_hint(text: str, *, max_sentences: int = 3, max_chars: int = 600) -> str:
    """The hint inside a reply: code removed, a leading "Hint:" label dropped, whitespace
    collapsed, at most ``max_sentences`` sentences and ``max_chars`` characters (cut at a
    word boundary)."""
    body = _FENCED.sub(" ", text)
    body = _LABEL.sub("", body.strip())
    body = " ".join(body.split())
    sentences = [s for s in _SENTENCE_END.split(body) if s]
    body = " ".join(sentences[:max_sentences])
    if len(body) > max_chars:
        cut = body[:max_chars]
        body = cut[: cut.rfind(" ")] if " " in cut else cut
    return body.strip()


_WORD = re.compile(r"[^\W_]+")


def babble(hint: str, *, max_run: int = 4, min_distinct: float = 0.3) -> str | None:
    """Why ``hint`` is babble rather than advice, or ``None``: a word said ``max_run`` times
    in a row ("box-box-box-box"), or, over a dozen words or more, fewer than
    ``min_distinct`` of them distinct. A small model's degenerate reply is no hint; the
    agent is better served by none (the run's fallback) than by noise it must read."""
    words = [w.lower() for w in _WORD.findall(hint)]
    run = 1
    for prev, word in pairwise(words):
        run = run + 1 if word == prev else 1
        if run >= max_run:
            return f"the hint repeats {word!r} {max_run} or more times in a row"
    if len(words) >= 12 and len(set(words)) < min_distinct * len(words):
        return f"the hint repeats itself: {len(set(words))} distinct words of {len(words)}"
    return None


def key_values(probes: Sequence[SolutionProbe], *, min_chars: int = 2) -> dict[int, set[str]]:
    """Per seed: solution tokens hidden from the first observation and not shared by the
    solutions of every probed seed."""
    per_seed: dict[int, set[str]] = {}
    for p in probes:
        seen = set(tokens(p.observation))
        hidden = {t for pay in payloads(p.solution) for t in tokens(pay)} - seen
        per_seed[p.seed] = {t for t in hidden if len(t) >= min_chars}
    if len(per_seed) > 1:
        common = set.intersection(*per_seed.values())
        per_seed = {s: v - common for s, v in per_seed.items()}
    return per_seed


def find_leak(hint: str, probes: Sequence[SolutionProbe], *, min_chars: int = 2) -> str | None:
    """Why ``hint`` leaks the solution, or ``None`` when it does not."""
    for p in probes:
        leaked = leaked_payloads(hint, p.solution)
        if leaked:
            return f"the hint contains the whole solution of seed {p.seed}: " + ", ".join(repr(x) for x in leaked)
    hint_tokens = set(tokens(hint))
    for seed, keys in key_values(probes, min_chars=min_chars).items():
        named = sorted(keys & hint_tokens)
        if named:
            return f"the hint names hidden solution values of seed {seed}: " + ", ".join(repr(x) for x in named)
    return None


class HintWriter:
    """Writes hints for many environments in batched generation calls."""

    def __init__(self, backend: LLMBackend, settings: HintSettings, probe: ProbeFn) -> None:
        self.backend = backend
        self.settings = settings
        self.probe = probe

    def write_many(self, requests: Sequence[HintRequest], *, seed: int | None = None) -> list[HintResult]:
        s = self.settings
        results: list[HintResult | None] = [None] * len(requests)
        probes: dict[int, list[SolutionProbe]] = {}
        for i, req in enumerate(requests):
            try:
                probes[i] = self.probe(req, s.check_seeds)
            except SpadeError as exc:  # sandbox errors: the check cannot run, so no hint is safe
                results[i] = HintResult(None, False, f"could not compute the solution for the leakage check: {exc}")
        attempts: dict[int, list[HintAttempt]] = {i: [] for i in probes}
        pending = sorted(probes)
        conversations = {i: hint_conversation(requests[i].source, skill=requests[i].skill) for i in pending}
        for round_ in range(s.attempts):
            if not pending:
                break
            completions = self.backend.chat(
                [conversations[i] for i in pending],
                max_new_tokens=s.max_new_tokens,
                temperature=s.temperature,
                seed=None if seed is None else seed + 7919 * round_,
            )
            still: list[int] = []
            for i, comp in zip(pending, completions, strict=True):
                hint = clean_hint(comp.text, max_sentences=s.max_sentences, max_chars=s.max_chars)
                leak = ("the reply holds no hint text" if not hint
                        else babble(hint) or find_leak(hint, probes[i], min_chars=s.min_key_chars))
                attempts[i].append(HintAttempt(comp.text, hint, leak, comp))
                if leak is None:
                    results[i] = HintResult(hint, True, None, attempts[i], conversations[i], comp)
                else:
                    still.append(i)
            pending = still
        for i in pending:
            last = attempts[i][-1].leak if attempts[i] else "no attempt"
            results[i] = HintResult(None, False, f"every hint attempt was rejected; last: {last}", attempts[i],
                                    conversations[i])
        return [r for r in results if r is not None]
