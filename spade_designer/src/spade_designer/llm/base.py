"""The one interface both roles (designer and agent) generate through.

A backend turns a batch of chat conversations into one :class:`Completion` each, in the
same order. Generation is batched by contract: callers hand over every conversation they
have, the backend decides how to split it for its hardware.

A conversation whose last message has role ``assistant`` is a *prefilled reply*: a
backend that says so (``continues_final_message = True``) continues that message instead
of opening a new one, and the completion holds only the text it generated after it.
Backends that cannot continue a message treat it as an ordinary finished turn.

:class:`ChatBackend` is the base the built-in backends share: it checks the arguments of
``chat`` once, here, and hands a :class:`SamplingRequest` to the backend's ``generate``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

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


#: The sampling defaults of every ``chat`` (one place: the protocol, the base class and
#: :class:`SamplingRequest` all read them here).
DEFAULT_MAX_NEW_TOKENS = 512
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 1.0


@runtime_checkable
class LLMBackend(Protocol):
    """What every backend offers; ``name`` identifies it in metadata and reports.

    A backend may also offer ``continues_final_message: bool`` (absent means ``False``);
    see the module docstring.
    """

    name: str

    def chat(
        self,
        conversations: list[Conversation],
        *,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        top_p: float = DEFAULT_TOP_P,
        seed: int | None = None,
        stop: list[str] | None = None,
    ) -> list[Completion]:
        """One completion per conversation, in order (see the module docstring); the one
        declaration of ``chat``: :class:`ChatBackend` implements it for the built-ins."""
        ...


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
    """Reject a sampling parameter out of range, naming it and the backend."""
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise SamplingError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}", backend=backend)
    if not temperature >= 0:
        raise SamplingError(f"temperature must be >= 0, got {temperature!r}", backend=backend)
    if not 0 < top_p <= 1:
        raise SamplingError(f"top_p must be in (0, 1], got {top_p!r}", backend=backend)


def apply_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """Cut ``text`` at the earliest stop string; ``True`` when one was found."""
    if not stop:
        return text, False
    cut = min((i for s in stop if s and (i := text.find(s)) != -1), default=-1)
    if cut == -1:
        return text, False
    return text[:cut], True


def continues_final_message(conversation: Conversation) -> bool:
    """``True`` when ``conversation`` ends with a prefilled assistant reply to continue."""
    return bool(conversation) and conversation[-1].get("role") == "assistant"


@dataclass(frozen=True)
class SamplingRequest:
    """The checked sampling arguments of one ``chat`` call."""

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    #: Seed of the call; item ``i`` of a batch uses ``seed + i`` where a backend seeds
    #: per item (distinct but reproducible).
    seed: int | None = None
    #: Text is cut at the earliest of these strings (which is not returned).
    stop: tuple[str, ...] = ()

    def item_seed(self, i: int) -> int | None:
        return None if self.seed is None else self.seed + i


class ChatBackend(LLMBackend, ABC):
    """Base of the built-in backends: implements :meth:`LLMBackend.chat` (declared there,
    checked against it by the type checker) by checking its arguments (the conversations'
    shape, the sampling ranges) and calling :meth:`generate` with a non-empty batch.

    Subclasses set ``name`` and implement :meth:`generate`; a subclass that continues
    prefilled assistant replies sets ``continues_final_message = True``.
    """

    name: str
    continues_final_message: ClassVar[bool] = False

    def chat(
        self,
        conversations: list[Conversation],
        *,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        top_p: float = DEFAULT_TOP_P,
        seed: int | None = None,
        stop: list[str] | None = None,
    ) -> list[Completion]:
        """:meth:`LLMBackend.chat`, its arguments checked first."""
        check_conversations(conversations, backend=self.name)
        check_sampling(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, backend=self.name)
        if stop is not None and not (
            isinstance(stop, (list, tuple)) and all(isinstance(s, str) and s for s in stop)
        ):
            raise SamplingError(f"stop must be a list of non-empty strings, got {stop!r}", backend=self.name)
        if not conversations:
            return []
        request = SamplingRequest(max_new_tokens, float(temperature), float(top_p), seed, tuple(stop or ()))
        return self.generate(list(conversations), request)

    @abstractmethod
    def generate(self, conversations: list[Conversation], sampling: SamplingRequest) -> list[Completion]:
        """Completions for a checked, non-empty batch, one per conversation, in order."""
