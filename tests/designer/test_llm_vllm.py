"""The vLLM backend through its interface, with the engine and module faked (CUDA-only wheel).

The fakes follow vLLM's offline API as of its current releases (``vllm.LLM.chat`` and
``vllm.SamplingParams``; outputs ``RequestOutput`` / ``CompletionOutput`` / ``Logprob``):
the same keyword names, the same refusal of ``add_generation_prompt`` together with
``continue_final_message``, and sample log-probabilities either as a list of
``{token_id: Logprob}`` or as ``FlatLogprobs``, which vLLM uses by default in newer
versions and which iterates the same way. ``scripts/gpu_check_vllm.py`` runs the real
engine on a GPU machine.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from spade_designer.errors import LLMBackendError


@dataclass(kw_only=True)
class SamplingParams:
    n: int = 1
    max_tokens: int | None = 16
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    stop: str | list[str] | None = None
    logprobs: int | None = None


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class FlatLogprobs(Sequence):
    """vLLM's flat container: one position per generated token, indexable to a dict."""

    start_indices: list[int] = field(default_factory=list)
    end_indices: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)

    def append(self, position: dict[int, Logprob]) -> None:
        self.start_indices.append(len(self.logprobs))
        for tok, lp in position.items():
            self.token_ids.append(tok)
            self.logprobs.append(lp.logprob)
        self.end_indices.append(len(self.logprobs))

    def __len__(self) -> int:
        return len(self.start_indices)

    def __getitem__(self, i):
        return {self.token_ids[j]: Logprob(self.logprobs[j]) for j in range(self.start_indices[i], self.end_indices[i])}


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | FlatLogprobs | None
    finish_reason: str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: None
    outputs: list[CompletionOutput]
    finished: bool = True


@dataclass
class FakeLLM:
    """Replies with the last message's words (up to max_tokens), then " END tail"."""

    started_with: dict = field(default_factory=dict)
    calls: list = field(default_factory=list)
    flat_logprobs: bool = False

    def chat(self, messages, sampling_params=None, use_tqdm=True, lora_request=None, chat_template=None,
             chat_template_content_format="auto", add_generation_prompt=True, continue_final_message=False,
             tools=None, chat_template_kwargs=None, tokenization_kwargs=None, mm_processor_kwargs=None):
        if add_generation_prompt and continue_final_message:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible")
        if continue_final_message and any(c[-1]["role"] != "assistant" for c in messages):
            raise ValueError("continue_final_message needs a final assistant message")
        self.calls.append({"messages": messages, "params": sampling_params, "use_tqdm": use_tqdm,
                           "add_generation_prompt": add_generation_prompt,
                           "continue_final_message": continue_final_message})
        out = []
        for k, (conv, params) in enumerate(zip(messages, sampling_params, strict=True)):
            words = conv[-1]["content"].split()[: params.max_tokens]
            ids = list(range(len(words)))
            lps = None
            if params.logprobs is not None:
                positions = [{i: Logprob(-0.1 * (i + 1))} for i in ids]
                lps = FlatLogprobs() if self.flat_logprobs else []
                for pos in positions:
                    lps.append(pos)
            text = " ".join(words) + " END tail"
            out.append(RequestOutput(str(k), None, [1, 2, 3], None, [CompletionOutput(0, text, ids, None, lps, "length")]))
        return out


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.SamplingParams = SamplingParams
    module.LLM = lambda **kw: FakeLLM(started_with=kw)
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_one_engine_call_per_batch_with_per_item_seeds(fake_vllm):
    from spade_designer.llm import VLLMBackend

    backend = VLLMBackend("some/model", gpu_memory_utilization=0.5, max_model_len=4096)
    assert backend.llm.started_with["model"] == "some/model"
    assert backend.llm.started_with["max_model_len"] == 4096
    convs = [[{"role": "user", "content": "a b c"}], [{"role": "user", "content": "d e"}]]
    out = backend.chat(convs, max_new_tokens=8, temperature=0.3, seed=5, stop=["END"])
    assert len(backend.llm.calls) == 1
    call = backend.llm.calls[0]
    params = call["params"]
    assert [p.seed for p in params] == [5, 6] and all(p.stop == ["END"] and p.logprobs == 0 for p in params)
    assert call["use_tqdm"] is False
    assert call["add_generation_prompt"] is True and call["continue_final_message"] is False
    assert [c.text for c in out] == ["a b c ", "d e "]
    assert out[0].prompt_ids == [1, 2, 3] and out[0].completion_ids == [0, 1, 2]
    assert out[0].logprobs == pytest.approx([-0.1, -0.2, -0.3])
    assert out[1].finish_reason == "length" and out[1].completion_tokens == 2


def test_wraps_a_running_engine(fake_vllm):
    from spade_designer.llm import VLLMBackend

    engine = FakeLLM()
    backend = VLLMBackend(llm=engine, logprobs=False)
    out = backend.chat([[{"role": "user", "content": "x"}]])
    assert backend.llm is engine and out[0].logprobs is None


def test_missing_vllm_says_how_to_install(monkeypatch):
    from spade_designer.llm import VLLMBackend

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(LLMBackendError, match=r"spade-designer\[vllm\]"):
        VLLMBackend("m")


def test_engine_start_failure_names_the_model(fake_vllm):
    from spade_designer.llm import VLLMBackend

    def boom(**kw):
        raise RuntimeError("CUDA out of memory")

    fake_vllm.LLM = boom
    with pytest.raises(LLMBackendError, match="m1.*CUDA out of memory"):
        VLLMBackend("m1")


@pytest.mark.parametrize("flat", [False, True])
def test_logprobs_are_read_from_either_of_vllms_containers(fake_vllm, flat):
    from spade_designer.llm import VLLMBackend

    backend = VLLMBackend(llm=FakeLLM(flat_logprobs=flat))
    (out,) = backend.chat([[{"role": "user", "content": "a b c d"}]], max_new_tokens=3)
    assert out.completion_ids == [0, 1, 2] and out.logprobs == pytest.approx([-0.1, -0.2, -0.3])


def test_prefilled_replies_are_continued_in_their_own_engine_call_and_order_is_kept(fake_vllm):
    from spade_designer.llm import VLLMBackend

    backend = VLLMBackend(llm=FakeLLM())
    fresh = [{"role": "user", "content": "one"}]
    prefilled = [{"role": "user", "content": "two"}, {"role": "assistant", "content": "```python x"}]
    out = backend.chat([prefilled, fresh, prefilled], seed=10)
    assert [c.text for c in out] == ["```python x END tail", "one END tail", "```python x END tail"]
    by_mode = {c["continue_final_message"]: c for c in backend.llm.calls}
    assert by_mode[True]["add_generation_prompt"] is False and len(by_mode[True]["messages"]) == 2
    assert by_mode[False]["add_generation_prompt"] is True and len(by_mode[False]["messages"]) == 1
    # each item keeps the seed of its position in the caller's batch
    assert [p.seed for p in by_mode[True]["params"]] == [10, 12] and by_mode[False]["params"][0].seed == 11


def test_logprobs_that_do_not_match_the_tokens_are_refused(fake_vllm):
    from spade_designer.llm import VLLMBackend

    class Short(FakeLLM):
        def chat(self, messages, sampling_params=None, **kw):
            out = super().chat(messages, sampling_params, **kw)
            out[0].outputs[0].logprobs = out[0].outputs[0].logprobs[:-1]
            return out

    backend = VLLMBackend(llm=Short())
    with pytest.raises(LLMBackendError, match="2 log-probabilities for 3 tokens"):
        backend.chat([[{"role": "user", "content": "a b c"}]])
