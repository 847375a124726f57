"""Deterministic recorded outputs, for tests and for replaying a recorded run.

Three sources of replies, consulted in this order for every conversation:

1. ``recorded``: replies keyed by :func:`conversation_key` (exact conversation match),
   e.g. loaded from a JSONL file written by :class:`RecordingBackend`;
2. ``rules``: ``(regex, replies)`` pairs matched against the last user message; a rule's
   replies are handed out in order, the last one repeating;
3. ``outputs``: a plain queue handed out in order.

Nothing matching raises :class:`ReplayExhausted` naming the conversation, so a test that
asks for more than it recorded fails loudly instead of hanging or inventing text.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import LLMBackendError, ReplayExhausted
from .base import ChatBackend, Completion, Conversation, LLMBackend, SamplingRequest, apply_stop


def conversation_key(conversation: Conversation) -> str:
    """Stable content address of a conversation (roles and contents)."""
    payload = json.dumps([[m["role"], m["content"]] for m in conversation], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _count_words(text: str) -> int:
    return len(text.split())


class ReplayBackend(ChatBackend):
    """An :class:`LLMBackend` that replays recorded text; see the module docstring.

    A prefilled assistant reply is "continued" by the recorded text, so tests can drive
    the designer's scaffolded prompts; rules still match the last *user* message.
    """

    continues_final_message = True

    def __init__(
        self,
        outputs: Iterable[str] = (),
        *,
        rules: Sequence[tuple[str, str | Sequence[str]]] = (),
        recorded: Mapping[str, str] | None = None,
        path: str | Path | None = None,
        name: str = "replay",
    ) -> None:
        self.name = name
        self._outputs: deque[str] = deque(outputs)
        self._rules: list[tuple[re.Pattern[str], list[str]]] = []
        for pattern, replies in rules:
            seq = [replies] if isinstance(replies, str) else list(replies)
            if not seq:
                raise LLMBackendError(f"rule {pattern!r} has no replies", backend=name)
            self._rules.append((re.compile(pattern), seq))
        self._rule_pos = [0] * len(self._rules)
        self._recorded: dict[str, str] = dict(recorded or {})
        if path is not None:
            self._recorded.update(load_recording(path))
        self._lock = threading.Lock()
        #: Every conversation received, in order (tests inspect prompts through it).
        self.calls: list[Conversation] = []

    def _reply(self, conversation: Conversation) -> str:
        key = conversation_key(conversation)
        if key in self._recorded:
            return self._recorded[key]
        last_user = next((m["content"] for m in reversed(conversation) if m["role"] == "user"), "")
        for i, (pattern, replies) in enumerate(self._rules):
            if pattern.search(last_user):
                reply = replies[min(self._rule_pos[i], len(replies) - 1)]
                self._rule_pos[i] += 1
                return reply
        if self._outputs:
            return self._outputs.popleft()
        preview = last_user[:80].replace("\n", " ")
        raise ReplayExhausted(
            f"no recorded reply for conversation {key[:12]} (last user message starts {preview!r})",
            backend=self.name,
        )

    def generate(self, conversations: list[Conversation], sampling: SamplingRequest) -> list[Completion]:
        out: list[Completion] = []
        with self._lock:
            for conv in conversations:
                self.calls.append([dict(m) for m in conv])
                text, _ = apply_stop(self._reply(conv), sampling.stop)
                out.append(
                    Completion(
                        text=text,
                        prompt_tokens=sum(_count_words(m["content"]) for m in conv),
                        completion_tokens=_count_words(text),
                        finish_reason="stop",
                    )
                )
        return out


def load_recording(path: str | Path) -> dict[str, str]:
    """Read a JSONL recording (``{"key": ..., "text": ...}`` per line)."""
    p = Path(path)
    if not p.is_file():
        raise LLMBackendError(f"recording {p} does not exist", backend="replay")
    found: dict[str, str] = {}
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row: Any = json.loads(line)
            found[str(row["key"])] = str(row["text"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise LLMBackendError(f"{p}:{lineno}: not a recording line ({exc})", backend="replay") from None
    return found


class RecordingBackend:
    """Wraps a backend and appends every (conversation, reply) to a JSONL file that
    :class:`ReplayBackend` (``path=``) replays exactly."""

    def __init__(self, inner: LLMBackend, path: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = Path(path)
        self._lock = threading.Lock()

    def chat(self, conversations: list[Conversation], **sampling: Any) -> list[Completion]:
        completions = self.inner.chat(conversations, **sampling)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            for conv, comp in zip(conversations, completions, strict=True):
                fh.write(json.dumps({"key": conversation_key(conv), "text": comp.text}, ensure_ascii=False) + "\n")
        return completions
