"""Invariants that hold for all inputs, checked with hypothesis."""

from __future__ import annotations

import keyword
import string

from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.actions import ToolCall
from spade_tooluse import bfcl
from spade_tooluse.base import check_arguments, function_schema, output_found, render_result
from spade_tooluse.reference_base import with_base_import

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
identifiers = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n))
words = st.text(string.ascii_letters + string.digits, min_size=1, max_size=8)

SCHEMA = function_schema(
    "t", "",
    {"s": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
     "l": {"type": "array"}, "o": {"type": "object"}, "e": {"type": "string", "enum": ["a", "b"]}},
    ["s"],
)


@given(st.dictionaries(st.sampled_from(["s", "n", "x", "b", "l", "o", "e", "zz"]), json_values, max_size=5))
def test_argument_checking_never_raises_and_accepts_exactly_fitting_arguments(arguments):
    problem = check_arguments(SCHEMA, arguments)
    assert problem is None or isinstance(problem, str)
    fits = (
        "s" in arguments and "zz" not in arguments
        and isinstance(arguments.get("s"), str)
        and all(isinstance(arguments[k], bool) for k in ("b",) if k in arguments)
        and all(isinstance(arguments[k], list) for k in ("l",) if k in arguments)
        and all(isinstance(arguments[k], dict) for k in ("o",) if k in arguments)
        and all(arguments[k] in ("a", "b") for k in ("e",) if k in arguments)
        and all(
            not isinstance(arguments[k], bool)
            and (isinstance(arguments[k], int) or (isinstance(arguments[k], float) and arguments[k].is_integer()))
            for k in ("n",) if k in arguments
        )
        and all(not isinstance(arguments[k], bool) and isinstance(arguments[k], (int, float)) for k in ("x",) if k in arguments)
    )
    assert (problem is None) == fits


@given(words, st.text(max_size=30), st.text(max_size=30))
def test_an_output_is_found_wherever_it_stands_as_a_word(output, before, after):
    text = f"{before} {output} {after}"
    assert output_found(output, text)
    assert output_found(output.upper(), text.lower())


@given(st.integers(0, 999), st.integers(1, 9))
def test_a_number_is_not_found_inside_a_longer_number(n, digit):
    assert not output_found(str(n), f"total {digit}{n}")
    assert not output_found(str(n), f"total {n}{digit}")


@given(json_values)
def test_rendered_results_are_bounded(value):
    from spade_tooluse.base import MAX_RESULT_CHARS

    out = render_result(value)
    assert len(str(out)) <= MAX_RESULT_CHARS + 40


@settings(max_examples=200)
@given(identifiers, st.dictionaries(identifiers, json_values, max_size=4))
def test_call_strings_round_trip(name, arguments):
    call = ToolCall(name, arguments)
    assert bfcl.parse_call(bfcl.call_string(call)) == (name, [], arguments)


@given(st.text(max_size=200))
def test_adding_the_base_import_is_idempotent(source):
    once = with_base_import(source)
    assert with_base_import(once) == once


@given(st.sampled_from(bfcl.MUTATIONS), st.integers(0, 10**6))
@settings(max_examples=25, deadline=None)
def test_mutations_keep_the_turn_count_and_never_raise(kind, seed):
    import random

    rng = random.Random(seed)
    entry = rng.choice(bfcl.load_entries())
    trajectory = bfcl.ground_truth_trajectory(entry)
    mutated = bfcl.mutate(trajectory, kind, rng)
    if mutated is not None:
        assert len(mutated) == len(trajectory)
        assert all(isinstance(c, ToolCall) for turn in mutated for step in turn for c in step)


def _parse(action: str):
    from spade_core.actions import parse_tool_action
    from spade_core.errors import ActionFormatError

    try:
        return parse_tool_action(action)
    except ActionFormatError:
        return None


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fuzz_actions_parse_or_fail_with_a_format_error_only(data):
    from spade_tooluse.fuzz import actions

    action = data.draw(actions())
    assert isinstance(action, str)
    _parse(action)  # anything else than ActionFormatError would propagate


def test_the_fuzz_strategy_reaches_every_kind_of_action():
    from hypothesis import find
    from spade_tooluse.fuzz import TOOL_NAMES, actions

    strategy = actions()
    several = find(strategy, lambda a: (p := _parse(a)) is not None and len(p.calls) >= 2)
    assert several.count("<tool_call>") >= 2
    assert find(strategy, lambda a: "<tool_call>" in a and _parse(a) is None)
    assert find(strategy, lambda a: (p := _parse(a)) is not None and p.answer is not None and p.calls)
    assert find(strategy, lambda a: (p := _parse(a)) is not None and any(c.name in TOOL_NAMES for c in p.calls) and any(c.arguments for c in p.calls))
