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


# --- answers shown in observations -----------------------------------------------------------

#: Words that name a hidden value: an answer of one plain word (a name, a word) counts as
#: shown only where one of these stands right before it (a word also appears where it is
#: just part of the scene: "you see a key"); a number, a code or several words need no cue.
SECRET_CUES = frozenset({
    "secret", "answer", "solution", "code", "hidden", "password", "culprit", "word", "correct",
    "combination", "pin", "debug", "cheat", "psst", "truth",
})
#: Tokens of context kept on each side of a shown answer.
_CONTEXT = 3


def answer_candidates(solution: list[str] | str) -> list[list[str]]:
    r"""What showing would give a solution away, as token runs: each payload whole (the
    text of a ``\boxed{...}``), its argument after a leading verb (``guess 4821`` ->
    ``4821``), and the payloads of a plan of several steps in a row (``\boxed{3}``,
    ``\boxed{1}``, ``\boxed{4}`` -> ``3 1 4``); for tool use, the ``<answer>`` to the first
    request only. A run of one character is left out, but for the last payload's digit (the
    final answer of a number game; a letter is as often an option's label as an answer,
    and the digits of intermediate moves are everywhere)."""
    actions = [solution] if isinstance(solution, str) else list(solution)
    pays = [tokens(p) for p in payloads(solution)]
    if any("<answer>" in a or "<tool_call>" in a for a in actions):
        # tool use: one answer per user request, and only the first request is asked
        # before the agent acts (a later one may rightly repeat what an earlier one said)
        pays = [tokens(a) for a in _ANSWER.findall(next((a for a in actions if "<answer>" in a), ""))[:1]]
    runs = [(i == len(pays) - 1, run) for i, toks in enumerate(pays)
            for run in (toks, toks[1:] if len(toks) > 1 and toks[0].isalpha() else [])]
    if len(pays) > 1:
        runs.append((False, [t for toks in pays for t in toks]))
    out: list[list[str]] = []
    for final, run in runs:
        text = "".join(run)
        if (len(text) >= 2 or (final and text.isdigit())) and run not in out:
            out.append(run)
    return out


def _wordy(run: list[str]) -> bool:
    """One plain word (no digit): shown only with a cue before it. A number, a code or a
    run of several words standing at one place on every seed needs none."""
    return len(run) == 1 and not any(ch.isdigit() for ch in run[0])


def shown_answer(texts: dict[int, list[str]], answers: dict[int, list[list[str]]],
                 sent: dict[int, list[set[str]]] | None = None,
                 only: tuple[int, tuple[str, ...]] | None = None) -> tuple[int, tuple[str, ...], dict[int, list[str]]] | None:
    """Where an observation shows the answer: ``(slot, left context, {seed: the run shown})``,
    or ``None``.

    ``texts[seed][slot]`` are the observations the agent reads before it has acted
    meaningfully (slot 0: after ``reset``; then after each garbage action), ``answers``
    the runs of :func:`answer_candidates` per seed, ``sent[seed][slot]`` the tokens of the
    actions sent up to that slot (an echo of the agent's own text is not a leak).

    The rule, stated for one slot across seeds: the answer shows when, on every seed, the
    observation holds that seed's own answer at one fixed place of the text: after the
    same words (up to three tokens, at least one, each found in every seed's observation
    at that slot) and before a word every seed's observation has (or the end of the text),
    with at least two different answers among the seeds. A value listed among others of
    its kind (``pick one of 23, 45, 67``) has a seed-varying neighbour and never counts; an
    example that happens to be the answer on some seeds (``for example \\boxed{23}``, the
    first listed) is another seed's non-answer, so it does not count either. A single plain
    word counts only after a cue (:data:`SECRET_CUES`). ``only`` restricts the search to one
    ``(slot, left context)``, to confirm a finding on further seeds.
    """
    seeds = sorted(texts)
    slots = max((len(texts[s]) for s in seeds), default=0)
    for slot in range(slots):
        if only is not None and slot != only[0]:
            continue
        present = [s for s in seeds if slot < len(texts[s]) and answers.get(s)]
        if len(present) < 2:
            continue
        toks = {s: tokens(texts[s][slot]) for s in present}
        common = set.intersection(*(set(t) for t in toks.values()))
        found: dict[tuple[str, ...], dict[int, tuple[str, ...]]] = {}
        for s in present:
            echoed = sent[s][slot] if sent and slot < len(sent.get(s, [])) else set()
            for run in answers[s]:
                if set(run) <= echoed:
                    continue  # the agent's own words, echoed
                for left in _fixed_places(toks[s], run, common):
                    if (_wordy(run) and not (set(left) & SECRET_CUES)) or (only is not None and left != only[1]):
                        continue
                    found.setdefault(left, {}).setdefault(s, tuple(run))
        for left, hits in found.items():
            if len(hits) == len(present) and len(set(hits.values())) >= 2:
                return slot, left, {s: list(r) for s, r in hits.items()}
    return None


def named_actions(plan: list[str], run: list[str]) -> list[str]:
    """The actions of ``plan`` that ``run`` spells out: those whose payload (whole, or after
    its verb) stands in ``run`` as a contiguous run of tokens. What an agent that copied the
    shown text would send."""
    out = []
    for action in plan:
        for p in payloads([action]):
            toks = tokens(p)
            for part in (toks, toks[1:] if len(toks) > 1 else []):
                n = len(part)
                if n and any(run[i : i + n] == part for i in range(len(run) - n + 1)):
                    out.append(action)
                    break
            else:
                continue
            break
    return out


def _fixed_places(toks: list[str], run: list[str], common: set[str]) -> list[tuple[str, ...]]:
    """Left contexts of the places where ``run`` stands between words of ``common``."""
    n = len(run)
    out = []
    for i in range(len(toks) - n + 1):
        if toks[i : i + n] != run:
            continue
        left = tuple(toks[max(0, i - _CONTEXT) : i])
        right = toks[i + n : i + n + 1]
        if left and set(left) <= common and set(right) <= common:
            out.append(left)
    return out
