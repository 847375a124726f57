"""Chat-template conversations as token ids, built incrementally.

The first prompt of an episode is the tokenizer's chat template applied to
``[system, user(first observation)]``. Every later observation is appended as the
template's *turn tail* — the text the template puts between the end of an assistant
message and the start of the next one — so the trajectory is prompt ids + model tokens +
tail tokens + model tokens ... and nothing the model produced is ever re-tokenised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import RolloutError

_ASSISTANT_MARK = "\x00SPADE-ASSISTANT\x00"
_OBS_MARK = "\x00SPADE-OBSERVATION\x00"


@dataclass(frozen=True)
class TurnTail:
    """The template text around a user message that follows an assistant message."""

    #: Text that closes the assistant message (e.g. ``<|im_end|>\n``) up to the observation.
    before: str
    #: Text after the observation, ending with the next assistant header.
    after: str
    #: Text of the stop token that closes an assistant message, if the template uses one.
    closing: str


class ChatFormat:
    """Renders episodes for one tokenizer; ``system_prompt`` may be empty."""

    def __init__(self, tokenizer: Any, system_prompt: str = "") -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            raise RolloutError(f"tokenizer {type(tokenizer).__name__} has no chat template")
        self.tokenizer = tokenizer
        self.system_prompt = system_prompt
        self.tail = self._probe_tail()

    def messages(self, observation: str) -> list[dict[str, str]]:
        """The opening conversation: the system prompt (when set) and the first observation."""
        msgs = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        msgs.append({"role": "user", "content": observation})
        return msgs

    def _probe_tail(self) -> TurnTail:
        conv = [
            *self.messages("first"),
            {"role": "assistant", "content": _ASSISTANT_MARK},
            {"role": "user", "content": _OBS_MARK},
        ]
        text = self.tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
        if _ASSISTANT_MARK not in text or _OBS_MARK not in text:
            raise RolloutError("the chat template drops message content; cannot build multi-turn prompts")
        tail = text.split(_ASSISTANT_MARK, 1)[1]
        before, after = tail.split(_OBS_MARK, 1)
        eos = self.tokenizer.eos_token or ""
        closing = eos if eos and before.startswith(eos) else ""
        return TurnTail(before=before, after=after, closing=closing)

    def first_prompts(self, observations: Sequence[str]) -> list[list[int]]:
        """Token ids of each episode's first prompt, ending with the assistant header."""
        texts = [
            self.tokenizer.apply_chat_template(self.messages(o), tokenize=False, add_generation_prompt=True)
            for o in observations
        ]
        return self._encode(texts)

    def turn_ids(self, observations: Sequence[str], closed: Sequence[bool]) -> list[list[int]]:
        """Token ids appended after a model turn: close the message, the observation, the next header.

        ``closed[i]`` says the model's turn already ended with the template's stop token,
        which is then not repeated.
        """
        texts = []
        for obs, done in zip(observations, closed, strict=True):
            before = self.tail.before
            if done and self.tail.closing:
                before = before[len(self.tail.closing) :]
            texts.append(before + obs + self.tail.after)
        return self._encode(texts)

    def _encode(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        return [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def decode(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return list(self.tokenizer.batch_decode([list(b) for b in batch], skip_special_tokens=True))
