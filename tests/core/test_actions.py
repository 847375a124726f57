r"""Action formats: ``\boxed{...}`` commands and ``<tool_call>`` / ``<answer>`` tags."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.actions import (
    ToolCall,
    find_boxed,
    format_boxed,
    format_tool_calls,
    parse_boxed,
    parse_tool_action,
    parse_tool_call,
)
from spade_core.errors import ActionFormatError

# --- boxed ----------------------------------------------------------------------------


def test_boxed_payload_keeps_nested_braces() -> None:
    assert parse_boxed(r"\boxed{f(x) = {a, {b}}}") == "f(x) = {a, {b}}"


def test_the_last_box_is_the_action() -> None:
    text = r"maybe \boxed{A} ... no, final: \boxed{B}"
    assert parse_boxed(text) == "B"
    assert parse_boxed(text, last=False) == "A"
    assert find_boxed(text) == ["A", "B"]


def test_reasoning_around_the_box_is_ignored_and_the_payload_stripped() -> None:
    assert parse_boxed("I think we should move.\n\\boxed{  move A C \n}") == "move A C"


@pytest.mark.parametrize("text", ["no box here", r"\boxed{unclosed", r"\boxed", ""])
def test_no_complete_box_means_no_action(text: str) -> None:
    assert parse_boxed(text) is None


def test_an_unclosed_box_after_a_complete_one_is_ignored() -> None:
    assert parse_boxed(r"\boxed{one} then \boxed{two") == "one"


def _balanced(alphabet: str = "abc xyz019,;=") -> st.SearchStrategy[str]:
    """Payloads whose braces are balanced (what a box can carry)."""
    atoms = st.text(alphabet=alphabet, max_size=8)
    return st.recursive(atoms, lambda inner: st.builds(lambda a, b, c: f"{a}{{{b}}}{c}", atoms, inner, atoms), max_leaves=6)


@given(_balanced())
def test_format_then_parse_round_trips_any_balanced_payload(payload: str) -> None:
    assert find_boxed(format_boxed(payload)) == [payload]
    assert parse_boxed(format_boxed(payload)) == payload.strip()


@given(_balanced(), _balanced(), st.text(alphabet="abc .\n", max_size=20))
def test_parse_picks_the_last_of_several_boxes(first: str, last: str, between: str) -> None:
    text = "reasoning " + format_boxed(first) + between + format_boxed(last) + " done"
    assert parse_boxed(text) == last.strip()


# --- tool calls -----------------------------------------------------------------------


def test_tool_calls_and_the_answer_are_parsed_around_free_text() -> None:
    text = (
        "Let me look that up.\n"
        '<tool_call>{"name": "search", "arguments": {"q": "paris", "k": 3}}</tool_call>\n'
        '<tool_call>{"name": "now"}</tool_call>\n'
        "<answer> 42 </answer>"
    )
    action = parse_tool_action(text)
    assert action.calls == (ToolCall("search", {"q": "paris", "k": 3}), ToolCall("now", {}))
    assert action.answer == "42"
    assert action.text == text


def test_double_encoded_arguments_are_decoded() -> None:
    call = parse_tool_call(json.dumps({"name": "f", "arguments": json.dumps({"x": [1, 2]})}))
    assert call == ToolCall("f", {"x": [1, 2]})


@pytest.mark.parametrize(
    "payload, reason",
    [
        ('{"name": "f", "arguments": {', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"arguments": {}}', "no string 'name'"),
        ('{"name": "", "arguments": {}}', "no string 'name'"),
        ('{"name": "f", "arguments": "{broken"}', "'arguments' is not valid JSON"),
        ('{"name": "f", "arguments": [1]}', "'arguments' must be a JSON object"),
        ('{"name": "f", "arguments": "[1]"}', "'arguments' must be a JSON object"),
    ],
)
def test_malformed_tool_calls_raise_action_format_error_with_the_reason(payload: str, reason: str) -> None:
    with pytest.raises(ActionFormatError, match=reason):
        parse_tool_action(f"<tool_call>{payload}</tool_call>")


def test_action_format_error_is_a_value_error_for_callers_that_catch_those() -> None:
    with pytest.raises(ValueError):
        parse_tool_call("nope")


_tag_like = st.sampled_from(["</tool_call>", "<tool_call>", "<answer>", "</answer>", "<", ">"])
_json_scalars = st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.text(max_size=10) | _tag_like
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
_calls = st.builds(ToolCall, _names, st.dictionaries(st.text(max_size=6) | _tag_like, _json, max_size=4))
# An answer must not contain the closing tag (it would end the answer early).
_answers = st.none() | st.text(max_size=30).filter(lambda s: "</answer>" not in s and "<answer>" not in s)


@given(st.lists(_calls, max_size=4), _answers)
def test_format_then_parse_round_trips_calls_and_answer(calls: list[ToolCall], answer: str | None) -> None:
    parsed = parse_tool_action(format_tool_calls(calls, answer))
    assert list(parsed.calls) == calls
    assert parsed.answer == (answer.strip() if answer is not None else None)


def test_a_tag_inside_an_argument_does_not_end_the_call() -> None:
    call = ToolCall("echo", {"text": "</tool_call><answer>x</answer>"})
    assert parse_tool_action(call.to_tag()).calls == (call,)
