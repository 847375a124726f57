"""The shared policy as an LLM backend, so the designer generates with the weights being
trained, through the same :class:`~.policy.TokenPolicy` as the agent (transformers or vLLM).
"""

from __future__ import annotations

from typing import Any

from spade_designer.llm.base import (
    ChatBackend,
    Completion,
    Conversation,
    SamplingRequest,
    apply_stop,
)
from spade_designer.llm.base import (
    continues_final_message as ends_with_prefill,
)

from .policy import Sampling, TokenPolicy


class PolicyChatBackend(ChatBackend):
    """``LLMBackend.chat`` over a :class:`TokenPolicy`; completions carry ids and logprobs.

    :class:`ChatBackend` checks the arguments of ``chat``; :meth:`generate` samples.

    ``stop`` strings cut the returned *text*; the token ids stay those sampled, since the
    trainer learns from what the policy actually produced.

    A conversation ending with an assistant message is a prefilled reply (the designer's
    code scaffold): it is rendered open and the policy continues it, so a short reply budget
    is spent on the game rather than on boilerplate. The prefill is part of the prompt ids.
    """

    continues_final_message = True

    def __init__(self, policy: TokenPolicy, tokenizer: Any, *, name: str = "policy", model_name: str = "policy") -> None:
        self.policy = policy
        self.tokenizer = tokenizer
        self.name = name
        self.model_name = model_name

    def generate(self, conversations: list[Conversation], sampling: SamplingRequest) -> list[Completion]:
        texts = [self.render(c) for c in conversations]
        prompts = [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]
        gens = self.policy.generate(
            prompts,
            max_new_tokens=sampling.max_new_tokens,
            sampling=Sampling(sampling.temperature, sampling.top_p),
            seed=sampling.seed,
        )
        out = []
        for prompt, gen in zip(prompts, gens, strict=True):
            text = self.tokenizer.decode(gen.completion_ids, skip_special_tokens=True)
            text, stopped = apply_stop(text, sampling.stop)
            out.append(
                Completion(
                    text=text,
                    prompt_tokens=len(prompt),
                    completion_tokens=len(gen.completion_ids),
                    finish_reason="stop" if gen.finished or stopped else "length",
                    prompt_ids=prompt,
                    completion_ids=list(gen.completion_ids),
                    logprobs=list(gen.logprobs),
                )
            )
        return out

    def render(self, conversation: Conversation) -> str:
        """Prompt text of one conversation; a final assistant message is left open."""
        if ends_with_prefill(conversation):
            return self.tokenizer.apply_chat_template(conversation, tokenize=False, continue_final_message=True)
        return self.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
