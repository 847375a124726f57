"""The vLLM backend through its interface, with the engine and module faked (CUDA-only wheel)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest
from spade_designer.errors import LLMBackendError


@dataclass
class SamplingParams:
    n: int = 1
    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    stop: list[str] | None = None
    logprobs: int | None = None


@dataclass
class Logprob:
    logprob: float


@dataclass
class CompletionOutput:
    text: str
    token_ids: list[int]
    finish_reason: str
    logprobs: list[dict[int, Logprob]] | None


@dataclass
class RequestOutput:
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]


@dataclass
class FakeLLM:
    started_with: dict = field(default_factory=dict)
    calls: list = field(default_factory=list)

    def chat(self, messages, sampling_params, use_tqdm=True):
        self.calls.append((messages, sampling_params, use_tqdm))
        out = []
        for conv, params in zip(messages, sampling_params, strict=True):
            words = conv[-1]["content"].split()[: params.max_tokens]
            ids = list(range(len(words)))
            lps = [{i: Logprob(-0.1 * (i + 1))} for i in ids] if params.logprobs is not None else None
            out.append(RequestOutput([1, 2, 3], [CompletionOutput(" ".join(words) + " END tail", ids, "length", lps)]))
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
    _, params, use_tqdm = backend.llm.calls[0]
    assert [p.seed for p in params] == [5, 6] and all(p.stop == ["END"] and p.logprobs == 0 for p in params)
    assert use_tqdm is False
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
