"""The argument checks every backend shares (``ChatBackend.chat``), stated once for all.

Each backend is built without its heavy engine (a fake vLLM module, an HTTP transport that
fails the test if called, a transformers backend around a stand-in model), because the
point is that bad input is refused *before* any backend-specific work starts.
"""

from __future__ import annotations

import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_designer.errors import ConversationError, SamplingError
from spade_designer.llm import ReplayBackend
from spade_designer.llm.base import ChatBackend, Completion, SamplingRequest, continues_final_message


class Untouchable:
    """Anything a backend would use to generate; fails the test when touched."""

    def __getattr__(self, name):
        raise AssertionError(f"backend work started ({name}) for input that should have been refused")

    def __call__(self, *args, **kwargs):
        raise AssertionError("backend work started for input that should have been refused")


class UntouchableModel(Untouchable):
    config = None  # read when the backend is built, which is allowed


def _openai():
    import httpx
    from spade_designer.llm.openai_backend import OpenAIBackend

    def refuse(request):
        raise AssertionError("an HTTP request was sent for input that should have been refused")

    return OpenAIBackend(transport=httpx.MockTransport(refuse), max_retries=0)


def _vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.SamplingParams = Untouchable()
    module.LLM = Untouchable()
    monkeypatch.setitem(sys.modules, "vllm", module)
    from spade_designer.llm.vllm_backend import VLLMBackend

    return VLLMBackend(llm=Untouchable())


def _transformers():
    from spade_designer.llm.transformers_backend import TransformersBackend

    return TransformersBackend(model=UntouchableModel(), tokenizer=Untouchable())


@pytest.fixture(params=["replay", "openai", "vllm", "transformers"])
def backend(request, monkeypatch):
    if request.param == "replay":
        return ReplayBackend(["never used"])
    if request.param == "openai":
        return _openai()
    if request.param == "vllm":
        return _vllm(monkeypatch)
    return _transformers()


def test_every_built_in_backend_shares_the_one_checked_entry_point(backend):
    assert isinstance(backend, ChatBackend)
    assert type(backend).chat is ChatBackend.chat


@pytest.mark.parametrize(
    "bad, match",
    [
        ("not a list", "list of message lists"),
        ([[]], "conversation 0 must be a non-empty"),
        ([[{"role": "user", "content": "ok"}], ["not a dict"]], "conversation 1 message 0 is not a dict"),
        ([[{"role": "wizard", "content": "x"}]], "role 'wizard'"),
        ([[{"role": "user", "content": 3}]], "content must be str"),
    ],
)
def test_malformed_conversations_are_refused_naming_the_item(backend, bad, match):
    with pytest.raises(ConversationError, match=match) as info:
        backend.chat(bad)
    assert info.value.backend == backend.name


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"max_new_tokens": 2.5}, "max_new_tokens"),
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.01}, "top_p"),
        ({"stop": "```"}, "stop must be a list"),
        ({"stop": [""]}, "stop must be a list"),
    ],
)
def test_out_of_range_sampling_is_refused_naming_the_parameter(backend, kwargs, match):
    with pytest.raises(SamplingError, match=match):
        backend.chat([[{"role": "user", "content": "hi"}]], **kwargs)


def test_an_empty_batch_is_answered_without_work(backend):
    assert backend.chat([]) == []


class Echo(ChatBackend):
    """A minimal subclass: what ``generate`` receives is what ``chat`` checked."""

    name = "echo"

    def __init__(self):
        self.requests: list[SamplingRequest] = []

    def generate(self, conversations, sampling):
        self.requests.append(sampling)
        return [Completion(c[-1]["content"], 0, 0) for c in conversations]


roles = st.sampled_from(["system", "user", "assistant", "tool"])
messages = st.fixed_dictionaries({"role": roles, "content": st.text(max_size=20)})
conversations = st.lists(st.lists(messages, min_size=1, max_size=4), max_size=4)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(conversations, st.integers(1, 4096), st.floats(0, 5), st.floats(0.01, 1), st.none() | st.integers(0, 10**6),
       st.none() | st.lists(st.text(min_size=1, max_size=5), max_size=3))
def test_for_all_well_formed_calls_generate_gets_the_batch_and_a_faithful_request(convs, tokens, temp, top_p, seed, stop):
    backend = Echo()
    out = backend.chat(convs, max_new_tokens=tokens, temperature=temp, top_p=top_p, seed=seed, stop=stop)
    assert [c.text for c in out] == [c[-1]["content"] for c in convs]
    if not convs:
        assert backend.requests == []
        return
    (req,) = backend.requests
    assert (req.max_new_tokens, req.temperature, req.top_p, req.seed, req.stop) == (
        tokens, temp, top_p, seed, tuple(stop or ()))
    assert [req.item_seed(i) for i in range(3)] == ([None] * 3 if seed is None else [seed, seed + 1, seed + 2])


@given(st.lists(messages, min_size=1, max_size=4))
def test_a_conversation_is_continued_exactly_when_it_ends_with_an_assistant_message(conv):
    assert continues_final_message(conv) == (conv[-1]["role"] == "assistant")


def test_backends_that_continue_a_prefilled_reply_say_so(monkeypatch):
    from spade_designer.llm.openai_backend import OpenAIBackend

    assert ReplayBackend.continues_final_message
    assert _transformers().continues_final_message
    assert _vllm(monkeypatch).continues_final_message
    # the OpenAI chat API has no portable way to continue an assistant message
    assert not OpenAIBackend.continues_final_message
