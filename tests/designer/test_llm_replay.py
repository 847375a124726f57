"""The replay backend: deterministic recorded outputs, loud when exhausted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_designer.errors import ConversationError, ReplayExhausted, SamplingError
from spade_designer.llm import Completion, LLMBackend, RecordingBackend, ReplayBackend, apply_stop, conversation_key


def conv(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_is_an_llm_backend():
    assert isinstance(ReplayBackend(), LLMBackend)


def test_outputs_are_handed_out_in_order_one_per_conversation():
    backend = ReplayBackend(["a", "b", "c"])
    out = backend.chat([conv("x"), conv("y")])
    assert [c.text for c in out] == ["a", "b"]
    assert all(isinstance(c, Completion) for c in out)
    assert backend.chat([conv("z")])[0].text == "c"
    assert [m[0]["content"] for m in backend.calls] == ["x", "y", "z"]


def test_rules_match_the_last_user_message_and_repeat_their_last_reply():
    backend = ReplayBackend(rules=[("hint", ["h1", "h2"]), ("design", "code")])
    texts = [c.text for c in backend.chat([conv("write a hint"), conv("design it"), conv("hint again"), conv("hint 3")])]
    assert texts == ["h1", "code", "h2", "h2"]


def test_exhausted_replay_raises_naming_the_conversation():
    backend = ReplayBackend(["only"])
    backend.chat([conv("first")])
    with pytest.raises(ReplayExhausted, match="second"):
        backend.chat([conv("second")])


def test_recording_round_trips_through_a_file(tmp_path):
    path = tmp_path / "rec.jsonl"
    recorder = RecordingBackend(ReplayBackend(["one", "two"]), path)
    recorder.chat([conv("p1"), conv("p2")])
    replay = ReplayBackend(path=path)
    # exact conversation match, in any order
    assert [c.text for c in replay.chat([conv("p2"), conv("p1"), conv("p2")])] == ["two", "one", "two"]


def test_bad_recording_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"key": "k", "text": "t"}\nnot json\n')
    with pytest.raises(Exception, match=r"bad.jsonl:2"):
        ReplayBackend(path=path)


@pytest.mark.parametrize(
    "bad, match",
    [
        ("not a list", "list of message lists"),
        ([[]], "non-empty"),
        ([[{"role": "wizard", "content": "x"}]], "role 'wizard'"),
        ([[{"role": "user", "content": 3}]], "content must be str"),
    ],
)
def test_malformed_conversations_are_rejected_before_any_work(bad, match):
    backend = ReplayBackend(["never used"])
    with pytest.raises(ConversationError, match=match):
        backend.chat(bad)
    assert backend.calls == []


@pytest.mark.parametrize("kwargs", [{"max_new_tokens": 0}, {"temperature": -1.0}, {"top_p": 0.0}, {"top_p": 1.5}])
def test_out_of_range_sampling_is_rejected(kwargs):
    with pytest.raises(SamplingError):
        ReplayBackend(["x"]).chat([conv("p")], **kwargs)


def test_stop_strings_cut_the_reply():
    out = ReplayBackend(["keep this STOP not this"]).chat([conv("p")], stop=["STOP"])
    assert out[0].text == "keep this "


@given(st.text(), st.lists(st.text(min_size=1), max_size=4))
def test_apply_stop_never_lengthens_and_removes_every_stop(text, stops):
    cut, stopped = apply_stop(text, stops)
    assert text.startswith(cut)
    assert stopped == any(s in text for s in stops)
    assert not any(s in cut for s in stops)


@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), st.text()), min_size=1, max_size=5))
def test_conversation_key_is_stable_and_content_sensitive(messages):
    c = [{"role": r, "content": t} for r, t in messages]
    assert conversation_key(c) == conversation_key([dict(m) for m in c])
    changed = [dict(m) for m in c]
    changed[-1]["content"] += "!"
    assert conversation_key(changed) != conversation_key(c)
