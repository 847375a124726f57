r"""Hypothesis strategies of plausible game actions, for property fuzzing of games.

The mix is deliberate: well-formed ``\boxed{verb args}`` commands with the verbs and
argument shapes games use (so fuzzing reaches deep game states), and near misses (broken
braces, empty or doubled boxes, odd spacing, stray Unicode) that a game must reject
politely. ``hypothesis`` is imported only when :func:`actions` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

#: Verbs seen in game command grammars (the seed pool's and common designer choices).
VERBS: tuple[str, ...] = (
    "query",
    "answer",
    "guess",
    "mod",
    "weigh",
    "compare",
    "ask",
    "move",
    "go",
    "fire",
    "ping",
    "dive",
    "term",
    "test",
    "classify",
    "encode",
    "decode",
    "appraise",
    "pack",
    "scan",
    "route",
    "eval",
    "submit",
    "toggle",
    "flip",
    "experiment",
    "causes",
    "do",
    "links",
    "try",
    "look",
    "use",
    "take",
    "open",
    "push",
    "swap",
    "rotate",
    "place",
    "select",
    "check",
    "probe",
    "measure",
    "reset",
)

_WORDS = (
    "north",
    "south",
    "east",
    "west",
    "up",
    "down",
    "left",
    "right",
    "none",
    "block",
    "water",
    "light",
    "heat",
    "Ava",
    "Ben",
    "yes",
    "no",
    "all",
    "river stone",
)


def actions() -> SearchStrategy[str]:
    """A hypothesis strategy of plausible, possibly malformed, game actions."""
    from hypothesis import strategies as st

    integer = st.one_of(st.integers(-12, 30), st.integers(-(10**6), 10**6)).map(str)
    letter = st.sampled_from("ABCDEFGHPQRSabcdefgh")
    cell = st.tuples(st.sampled_from("ABCDEFGH"), st.integers(0, 9)).map(lambda t: f"{t[0]}{t[1]}")
    pair = st.tuples(st.integers(-1, 9), st.integers(-1, 9)).map(lambda t: f"{t[0]} {t[1]}")
    digits = st.text("0123456789", min_size=1, max_size=8)
    letters = st.text("KNYNkny", min_size=1, max_size=8)
    link = st.tuples(st.sampled_from("PQRSX"), st.sampled_from("PQRSX")).map(lambda t: f"{t[0]}>{t[1]}")
    word = st.sampled_from(_WORDS)
    argument = st.one_of(integer, letter, cell, pair, digits, letters, link, word)
    arguments = st.lists(argument, max_size=6).map(" ".join)
    command = st.tuples(st.sampled_from(VERBS), arguments).map(lambda t: f"{t[0]} {t[1]}".strip())
    spaced = command.map(lambda c: "  " + c.upper().replace(" ", "   ") + " ")
    well_formed = st.one_of(command, spaced).map(lambda c: "\\boxed{" + c + "}")
    reasoning = st.text(max_size=40)
    with_thoughts = st.tuples(reasoning, well_formed).map(lambda t: f"{t[0]}\n{t[1]}")
    near_miss = st.one_of(
        command.map(lambda c: "\\boxed{" + c),  # unclosed
        command.map(lambda c: "boxed{" + c + "}"),  # no backslash
        command.map(lambda c: "\\boxed{{" + c + "}}"),  # nested braces
        command,  # not boxed at all
        st.just("\\boxed{}"),
        st.tuples(well_formed, well_formed).map("".join),  # two boxes: the last one counts
        st.text(max_size=60).map(lambda t: "\\boxed{" + t + "}"),
        st.text(max_size=80),
    )
    return st.one_of(well_formed, with_thoughts, near_miss)
