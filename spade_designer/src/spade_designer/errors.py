"""Exception types of the designer (all :class:`spade_core.errors.SpadeError`).

Each names what the user must change: the backend and its endpoint, the corpus file and
line, the config field.
"""

from __future__ import annotations

from spade_core.errors import SpadeError


class DesignerError(SpadeError):
    """Base class of the designer's deliberate errors."""


class LLMBackendError(DesignerError):
    """An LLM backend could not be created or failed to generate.

    ``backend`` names the backend ("openai", "transformers"...).
    """

    def __init__(self, message: str, *, backend: str | None = None) -> None:
        super().__init__(f"{backend} backend: {message}" if backend else message)
        self.backend = backend


class LLMRequestRejected(LLMBackendError):
    """The model server refused one request (a client error such as a conversation longer
    than its context) while it serves others: only that conversation's caller should
    fail. Core code, which cannot import this class, reads ``request_rejected``."""

    request_rejected = True


class ConversationError(LLMBackendError, ValueError):
    """A conversation passed to ``chat`` is malformed (roles, content types)."""


class SamplingError(LLMBackendError, ValueError):
    """A sampling parameter (max_new_tokens, temperature, top_p) is out of range."""


class ReplayExhausted(LLMBackendError):
    """The replay backend was asked for more completions than it recorded."""


class CorpusError(DesignerError):
    """A corpus could not be opened or a document could not be read.

    ``location`` is the file (and line or row) or dataset that failed.
    """

    def __init__(self, message: str, *, location: str | None = None) -> None:
        super().__init__(f"{location}: {message}" if location else message)
        self.location = location


class ExtractionError(DesignerError):
    """No environment source could be extracted from a model reply."""


class UnknownSkillError(DesignerError, ValueError):
    """The requested skill is not one of the domain's skills."""

    def __init__(self, domain: str, skill: str, known: tuple[str, ...]) -> None:
        super().__init__(
            f"domain {domain!r} has no skill {skill!r} (skills: {', '.join(known) or 'none'})"
        )
        self.domain = domain
        self.skill = skill
        self.known = known
