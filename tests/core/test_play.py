r"""PlaySession, the terminal-free logic of ``spade play``: typed lines become actions
(``\boxed{...}`` added for boxed domains only when missing) or session commands."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from spade_core.actions import parse_boxed
from spade_core.app.play import PlaySession
from spade_core.env import ReferenceEnvAdapter
from spade_core.metadata import ActionFormat

from .conftest import reference_class


def session(fmt: ActionFormat = ActionFormat.boxed, seed: int | None = 3) -> PlaySession:
    s = PlaySession(ReferenceEnvAdapter(reference_class("guess_number"), max_turns=8), fmt, seed)
    s.reset()
    return s


@given(st.text(alphabet="abcxyz 0123456789-_.,:;=()[]", min_size=1, max_size=30).filter(lambda t: t.strip()))
def test_a_bare_line_is_boxed_and_reads_back_as_typed(line: str) -> None:
    action = session().to_action(line)
    assert action == "\\boxed{" + line + "}"
    assert parse_boxed(action) == line.strip()


def test_an_already_boxed_line_is_sent_as_typed() -> None:
    assert session().to_action("I guess \\boxed{12}") == "I guess \\boxed{12}"


def test_tool_call_and_free_text_domains_get_the_line_unchanged() -> None:
    line = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert session(ActionFormat.tool_call).to_action(line) == line
    assert session(ActionFormat.free_text).to_action("hello") == "hello"


def test_a_drawn_seed_is_remembered_so_reset_replays_the_episode() -> None:
    s = session(seed=None)
    assert s.seed is not None
    first = s.env.solution()
    s.handle(":reset")
    assert s.env.solution() == first


def test_steps_accumulate_and_the_episode_ends_on_success() -> None:
    s = session()
    actions = s.env.solution()
    turns = [s.handle(a) for a in actions]
    assert [t.kind for t in turns] == ["step"] * len(actions)
    assert turns[-1].terminated and turns[-1].reward == 1.0
    assert s.over and s.turns == len(actions) and s.last_reward == 1.0
    assert s.handle("5").kind == "error"
    assert s.handle(":reset").kind == "reset" and not s.over


def test_blank_lines_are_ignored() -> None:
    assert session().handle("   ").kind == "ignored"
