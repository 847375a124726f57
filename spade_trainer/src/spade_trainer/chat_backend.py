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

    ``stop`` strings cut the returned text *and* the token ids: the ids end with the token
    that completed the stop string (the designer's closing code fence), so what the trainer
    scores is exactly the reply that was used; tokens sampled past it are dropped with their
    logprobs (the policy backends generate to their own stop tokens only).

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
            ids, logprobs = list(gen.completion_ids), list(gen.logprobs)
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            text, stopped = apply_stop(text, sampling.stop)
            if stopped:
                keep = self.tokens_to_stop(ids, sampling.stop)
                ids, logprobs = ids[:keep], logprobs[:keep]
            out.append(
                Completion(
                    text=text,
                    prompt_tokens=len(prompt),
                    completion_tokens=len(ids),
                    finish_reason="stop" if gen.finished or stopped else "length",
                    prompt_ids=prompt,
                    completion_ids=ids,
                    logprobs=logprobs,
                )
            )
        return out

    def tokens_to_stop(self, ids: list[int], stop: tuple[str, ...]) -> int:
        """The fewest leading tokens of ``ids`` whose text holds a stop string (``len(ids)``
        when none does). Found by bisection: a longer prefix decodes to a longer text."""

        def holds(k: int) -> bool:
            return apply_stop(self.tokenizer.decode(ids[:k], skip_special_tokens=True), stop)[1]

        if not ids or not holds(len(ids)):
            return len(ids)
        lo, hi = 1, len(ids)
        while lo < hi:
            mid = (lo + hi) // 2
            if holds(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def render(self, conversation: Conversation) -> str:
        """Prompt text of one conversation; a final assistant message is left open."""
        if ends_with_prefill(conversation):
            return self.tokenizer.apply_chat_template(conversation, tokenize=False, continue_final_message=True)
        return self.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
