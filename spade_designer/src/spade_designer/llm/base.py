"""The one interface both roles (designer and agent) generate through.

A backend turns a batch of chat conversations into one :class:`Completion` each, in the
same order. Generation is batched by contract: callers hand over every conversation they
have, the backend decides how to split it for its hardware.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import ConversationError, SamplingError

Message = dict[str, str]
Conversation = list[Message]

ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass
class Completion:
    """One generated reply.

    ``prompt_ids`` / ``completion_ids`` / ``logprobs`` are filled by backends that see
    tokens (transformers, vllm); the trainer needs them for GRPO. ``logprobs`` holds one
    value per completion token: the log-probability of the sampled token under the
    sampling distribution's underlying model (before temperature).
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = "stop"
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None


@runtime_checkable
class LLMBackend(Protocol):
    """What every backend offers; ``name`` identifies it in metadata and reports."""

    name: str

    def chat(
        self,
        conversations: list[Conversation],
        *,
        max_new_tokens: int = 512,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: list[str] | None = None,
    ) -> list[Completion]: ...


def check_conversations(conversations: Sequence[Conversation], *, backend: str) -> None:
    """Reject malformed input before any work is done, naming the bad item."""
    if not isinstance(conversations, (list, tuple)):
        raise ConversationError(
            f"conversations must be a list of message lists, got {type(conversations).__name__}",
            backend=backend,
        )
    for i, conv in enumerate(conversations):
        if not isinstance(conv, (list, tuple)) or not conv:
            raise ConversationError(f"conversation {i} must be a non-empty list of messages", backend=backend)
        for j, msg in enumerate(conv):
            if not isinstance(msg, dict):
                raise ConversationError(f"conversation {i} message {j} is not a dict", backend=backend)
            role, content = msg.get("role"), msg.get("content")
            if role not in ROLES:
                raise ConversationError(
                    f"conversation {i} message {j} has role {role!r}; expected one of {sorted(ROLES)}",
                    backend=backend,
                )
            if not isinstance(content, str):
                raise ConversationError(
                    f"conversation {i} message {j} content must be str, got {type(content).__name__}",
                    backend=backend,
                )


def check_sampling(
    *, max_new_tokens: int, temperature: float, top_p: float, backend: str
) -> None:
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise SamplingError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}", backend=backend)
    if not temperature >= 0:
        raise SamplingError(f"temperature must be >= 0, got {temperature!r}", backend=backend)
    if not 0 < top_p <= 1:
        raise SamplingError(f"top_p must be in (0, 1], got {top_p!r}", backend=backend)


def apply_stop(text: str, stop: list[str] | None) -> tuple[str, bool]:
    """Cut ``text`` at the earliest stop string; ``True`` when one was found."""
    if not stop:
        return text, False
    cut = min((i for s in stop if s and (i := text.find(s)) != -1), default=-1)
    if cut == -1:
        return text, False
    return text[:cut], True
