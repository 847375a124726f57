"""Where a parse failed, said one way (spade_core.locations): "line L, column C", joined to a
parser's own wording once (the standard library's JSON messages that end in "at" got a
second "at" before: "Unterminated string starting at at column 10")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.actions import parse_tool_call
from spade_core.errors import ActionFormatError
from spade_core.locations import at_place, json_error, place, syntax_error

from .cli_support import spade

DOUBLED = re.compile(r"\bat at\b")


@pytest.mark.parametrize(
    "line, column, expected",
    [(2, 14, "line 2, column 14"), (2, None, "line 2"), (None, 7, "column 7"), (None, None, ""), (0, 0, "")],
)
def test_a_place_names_what_is_known(line: int | None, column: int | None, expected: str) -> None:
    assert place(line, column) == expected


@pytest.mark.parametrize(
    "message, expected",
    [
        ("Expecting value", "Expecting value at line 1, column 3"),
        ("Unterminated string starting at", "Unterminated string starting at line 1, column 3"),
        ("Invalid control character at ", "Invalid control character at line 1, column 3"),
        ("repeat at", "repeat at line 1, column 3"),
        ("what", "what at line 1, column 3"),
    ],
)
def test_a_message_is_joined_to_its_place_with_one_at(message: str, expected: str) -> None:
    assert at_place(message, 1, 3) == expected


def test_an_unknown_place_leaves_the_message_alone() -> None:
    assert at_place("Expecting value") == "Expecting value"


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"code": "class X', "Unterminated string starting at line 1, column 10"),
        ('{"a": "x\ty"}', "Invalid control character at line 1, column 9"),
        ('{\n"a": 1\n"b": 2}', "Expecting ',' delimiter at line 3, column 1"),
        ("", "Expecting value at line 1, column 1"),
    ],
)
def test_json_errors_read_reason_then_place(text: str, expected: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    assert json_error(caught.value) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]":,\\ \tabtrue0123-.e\n', max_size=40))
def test_no_json_error_says_at_twice(text: str) -> None:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        for message in (json_error(exc), json_error(exc, one_line=True)):
            assert not DOUBLED.search(message), message
            assert f"column {exc.colno}" in message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="def f(x):\n  return'\"\\ )]}[{=+0at", max_size=40))
def test_no_syntax_error_says_at_twice(source: str) -> None:
    try:
        compile(source, "<env>", "exec")
    except SyntaxError as exc:
        message = syntax_error(exc)
        assert not DOUBLED.search(message), message
        assert message.startswith(f"syntax error at line {exc.lineno}") if exc.lineno else message.startswith("syntax error: ")
    except ValueError:  # null bytes are not a syntax error
        pass


def test_a_syntax_error_names_line_column_and_reason() -> None:
    with pytest.raises(SyntaxError) as caught:
        compile("class E:\n    def reset(self, seed=None)\n        pass\n", "<env>", "exec")
    assert syntax_error(caught.value) == "syntax error at line 2, column 31: expected ':'"


@pytest.mark.parametrize(
    "payload, expected",
    [
        ('{"name": "f', "tool call is not valid JSON: Unterminated string starting at line 1, column 10"),
        ('{"name": "f", "arguments": "{\\"x\\": \\"y"}', "tool call 'arguments' is not valid JSON: "
         "Unterminated string starting at line 1, column 7"),
    ],
)
def test_a_tool_call_of_broken_json_says_where(payload: str, expected: str) -> None:
    with pytest.raises(ActionFormatError) as caught:
        parse_tool_call(payload)
    assert str(caught.value) == expected


@pytest.mark.usefixtures("spade_home")
def test_spade_import_of_a_jsonl_line_with_an_unterminated_string_says_at_once(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"code": "class X\n{"code": 1,\n', encoding="utf-8")
    run = spade("import", str(pool), "--domain", "games", "--json")
    assert run.exit_code == 1
    reasons = [row["reason"] for row in json.loads(run.stdout)]
    # the column is on the line itself: the line ending is not part of the document
    assert reasons == [
        "malformed JSON: Unterminated string starting at column 10",
        "malformed JSON: Expecting property name enclosed in double quotes at column 12",
    ]
