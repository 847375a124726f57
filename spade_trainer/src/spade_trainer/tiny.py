"""A tiny causal LM and tokenizer built in-process (no download), for tests and smoke runs.

The tokenizer is a byte-level BPE trained in well under a second on standard-library text, with ChatML
special tokens and a ChatML chat template; the model is a 2-layer Llama with hidden size
64. Together they exercise every code path of generation and GRPO training on a CPU.
"""

from __future__ import annotations

from typing import Any

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_TRAINING_TEXT = (
    "You are an agent acting in a text environment. Think briefly, then give exactly one action "
    "wrapped as \\boxed{your action}. Guess the number between 1 and 10. Too high. Too low. Correct! "
    "move left right up down open door take key answer tool_call name arguments "
    "class GuessEnv: def reset(self, seed=None): return 'obs', {} def step(self, action): "
    "return obs, 1.0, True, False, {} 0 1 2 3 4 5 6 7 8 9 { } ( ) [ ] < > = + - * / . , : ; ' \" "
)


def _training_texts() -> list[str]:
    """English prose and Python code from the standard library (always present, deterministic
    for a given Python), so prompts of several thousand characters stay a few thousand tokens."""
    import inspect
    import json.decoder
    import random as random_module
    import textwrap

    texts = [_TRAINING_TEXT] * 4
    for module in (random_module, textwrap, json.decoder):
        texts.append(inspect.getsource(module))
    return texts


def build_tiny_tokenizer(vocab_size: int = 2048) -> Any:
    """A fast tokenizer with ChatML tokens, ``pad``/``eos`` set and left padding."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(_training_texts(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


def build_tiny_model(tokenizer: Any, *, seed: int = 0) -> Any:
    """A randomly initialised 2-layer Llama (hidden 64) matching ``tokenizer``'s vocabulary."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model
