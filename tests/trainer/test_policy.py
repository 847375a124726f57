"""The policy interfaces: transformers generation from token ids, the vLLM adapter (through its
interface only: vLLM cannot run on CPU), and the chat backend the designer uses."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from spade_trainer.chat_backend import PolicyChatBackend
from spade_trainer.errors import RolloutError
from spade_trainer.policy import Generation, InstantPolicy, Sampling, TransformersPolicy, VLLMPolicy


def test_transformers_logprobs_are_the_models_own(tiny_model: Any, tiny_tokenizer: Any) -> None:
    tok = tiny_tokenizer
    prompts = [tok("Guess a number", add_special_tokens=False)["input_ids"], tok("move", add_special_tokens=False)["input_ids"]]
    policy = TransformersPolicy(tiny_model, tok)
    gens = policy.generate(prompts, max_new_tokens=6, sampling=Sampling(temperature=1.0), seed=3)
    for p, g in zip(prompts, gens, strict=True):
        assert 1 <= len(g.completion_ids) <= 6 and len(g.logprobs) == len(g.completion_ids)
        with torch.no_grad():  # unpadded forward pass: padding must not change what was sampled
            logits = tiny_model(torch.tensor([p + g.completion_ids])).logits.log_softmax(-1)[0]
        expected = [logits[len(p) - 1 + i, t].item() for i, t in enumerate(g.completion_ids)]
        assert g.logprobs == pytest.approx(expected, abs=1e-4)


def test_same_seed_same_sample(tiny_model: Any, tiny_tokenizer: Any) -> None:
    policy = TransformersPolicy(tiny_model, tiny_tokenizer)
    a = policy.generate([[5, 6, 7]], max_new_tokens=5, sampling=Sampling(), seed=11)
    b = policy.generate([[5, 6, 7]], max_new_tokens=5, sampling=Sampling(), seed=11)
    assert a == b


def test_generation_restores_training_mode(tiny_model: Any, tiny_tokenizer: Any) -> None:
    tiny_model.train()
    TransformersPolicy(tiny_model, tiny_tokenizer).generate([[5]], max_new_tokens=2, sampling=Sampling(), seed=0)
    assert tiny_model.training


def test_bad_sampling_is_refused() -> None:
    with pytest.raises(RolloutError, match="top_p"):
        Sampling(top_p=0.0)


class _FakeVLLMEngine:
    """Test double shaped like ``vllm.LLM``: records calls, answers fixed outputs."""

    llm_engine = object()

    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any]] = []

    def generate(self, prompts: list[dict], params: Any, use_tqdm: bool = False) -> list[Any]:
        self.calls.append((prompts, params))
        out = SimpleNamespace(token_ids=[9, 2], logprobs=[{9: SimpleNamespace(logprob=-0.5)},
                                                          {2: SimpleNamespace(logprob=-0.1)}], finish_reason="stop")
        return [SimpleNamespace(outputs=[out]) for _ in prompts]


def test_vllm_colocated_generates_from_token_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=lambda **kw: kw))
    engine = _FakeVLLMEngine()
    gens = VLLMPolicy(engine, stop_token_ids=[2]).generate(
        [[1, 2, 3], [4]], max_new_tokens=7, sampling=Sampling(0.5, 0.9), seed=4)
    prompts, params = engine.calls[0]
    assert prompts == [{"prompt_token_ids": [1, 2, 3]}, {"prompt_token_ids": [4]}]
    # one SamplingParams per request: a batch seed gives request i the seed 4 + i
    assert [p["seed"] for p in params] == [4, 5]
    for p in params:
        assert p["max_tokens"] == 7 and p["temperature"] == 0.5 and p["stop_token_ids"] == [2]
    assert gens == [Generation([9, 2], [-0.5, -0.1], True)] * 2


def test_vllm_server_mode_uses_the_trl_client() -> None:
    class Client:
        def generate(self, **kw: Any) -> dict:
            self.kw = kw
            return {"completion_ids": [[8, 8]], "logprobs": [[[-1.0], [-2.0]]]}

    client = Client()
    gens = VLLMPolicy(client, stop_token_ids=[2]).generate([[1]], max_new_tokens=3, sampling=Sampling(), seed=None)
    assert client.kw["prompts"] == [[1]] and client.kw["max_tokens"] == 3
    assert gens == [Generation([8, 8], [-1.0, -2.0], False)]


def test_chat_backend_returns_ids_for_training(tiny_tokenizer: Any) -> None:
    tok = tiny_tokenizer
    answer = tok("class GuessEnv: pass STOP more", add_special_tokens=False)["input_ids"]
    backend = PolicyChatBackend(InstantPolicy(answer), tok)
    (c,) = backend.chat([[{"role": "user", "content": "design"}]], max_new_tokens=64, stop=["STOP"])
    assert c.text.strip() == "class GuessEnv: pass"
    # the ids are cut with the text: they end with the token that completed the stop string
    assert c.completion_ids == answer[: len(c.completion_ids)] and len(c.logprobs) == len(c.completion_ids)
    assert "STOP" in tok.decode(c.completion_ids) and "more" not in tok.decode(c.completion_ids)
    assert "STOP" not in tok.decode(c.completion_ids[:-1])
    assert c.finish_reason == "stop" and c.completion_tokens == len(c.completion_ids)
    assert tok.decode(c.prompt_ids).endswith("<|im_start|>assistant\n")


def test_tokens_after_the_closing_fence_are_not_trained(tiny_tokenizer: Any) -> None:
    from spade_designer.designer import CLOSING_FENCE

    tok = tiny_tokenizer
    code = "        return 'ok'\n```"
    answer = tok(code + "\n\nThis game is fun. More words after the fence.", add_special_tokens=False)["input_ids"]
    backend = PolicyChatBackend(InstantPolicy(answer, finished=False), tok)
    (c,) = backend.chat([[{"role": "user", "content": "design"}]], max_new_tokens=64, stop=[CLOSING_FENCE])
    assert c.text == "        return 'ok'"
    trained = tok.decode(c.completion_ids)
    assert trained.rstrip().endswith("```") and "fun" not in trained
    assert len(c.completion_ids) < len(answer) and len(c.logprobs) == len(c.completion_ids)


def _rollout(model: Any, tokenizer: Any, *, reuse: bool, temperature: float) -> tuple[list[Any], TransformersPolicy]:
    from spade_trainer.envrefs import seed_playable
    from spade_trainer.inprocess import TrustedEnvPool
    from spade_trainer.rollout import EpisodeSpec, ReplyShape, RolloutEngine, TokenBudget

    policy = TransformersPolicy(model, tokenizer, reuse_cache=reuse)
    engine = RolloutEngine(TrustedEnvPool(), policy, tokenizer, budget=TokenBudget(per_turn=6, per_episode=512),
                           sampling=Sampling(temperature, 1.0), reply=ReplyShape(prefill="\\boxed{", cut_at_action=True))
    env = seed_playable("higher_lower")
    return engine.run([EpisodeSpec(env, False, 10**9 + i) for i in range(6)], seed=3), policy


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_later_turns_reuse_the_cache_and_sample_what_a_fresh_read_would(
        tiny_model: Any, tiny_tokenizer: Any, temperature: float) -> None:
    fresh, read_all = _rollout(tiny_model, tiny_tokenizer, reuse=False, temperature=temperature)
    cached, read_new = _rollout(tiny_model, tiny_tokenizer, reuse=True, temperature=temperature)
    assert max(ep.turns for ep in fresh) > 1  # later turns happened
    assert [ep.completion_ids for ep in cached] == [ep.completion_ids for ep in fresh]
    drift = max(abs(a - b) for x, y in zip(fresh, cached, strict=True) for a, b in zip(x.logprobs, y.logprobs, strict=True))
    assert drift < 1e-4
    # the same prompts were given; the cached policy read only each turn's new tokens
    assert read_new.prompt_tokens == read_all.prompt_tokens == read_all.read_tokens
    assert read_new.read_tokens < read_all.read_tokens / 2
    assert read_new._last is None  # the engine released the cache when the rollout ended


def test_a_prompt_that_continues_no_earlier_row_is_read_whole(tiny_model: Any, tiny_tokenizer: Any) -> None:
    policy = TransformersPolicy(tiny_model, tiny_tokenizer)
    (first,) = policy.generate([[5, 6, 7]], max_new_tokens=3, sampling=Sampling(0.0), seed=0)
    policy.generate([[5, 6, 7, *first.completion_ids, 9]], max_new_tokens=3, sampling=Sampling(0.0), seed=0)
    assert policy.read_tokens == 3 + 1  # the first prompt, then only the one new token
    policy.generate([[8, 9, 10, 11]], max_new_tokens=3, sampling=Sampling(0.0), seed=0)  # another conversation
    assert policy.read_tokens == 4 + 4
    policy.release()
    assert policy._last is None
