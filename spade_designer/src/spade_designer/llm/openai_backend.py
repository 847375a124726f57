"""Any OpenAI-compatible chat completions endpoint (vLLM server, SGLang, llama.cpp server,
Ollama, hosted APIs).

Conversations of a batch are sent concurrently (``concurrency`` requests in flight). A
request that fails in a way that may pass on retry (connection error, timeout, HTTP 408,
409, 429, 5xx) is retried with exponential backoff and jitter, honouring ``Retry-After``;
any other HTTP error fails the batch at once with the status and the server's message.
Token usage reported by the server is accumulated in :attr:`OpenAIBackend.usage`.

The server is not trusted with the client's memory or time: ``timeout_s`` is a deadline for
each request as a whole (connecting, waiting and reading the answer), not for each read, so
a server that trickles its answer cannot hold a request for longer; an answer over
``max_response_bytes`` is refused as soon as its declared length or the bytes read pass
the limit, without being read into memory. The deadline bounds every socket operation of
the request (connecting, sending, each read of the headers and of the body) by the time
left to it: the network backend of the client's connection pool is wrapped so (see
:func:`spade_core.app.http_reads.bound_by_deadlines`); a client given its own ``transport`` gets the deadline checked
between the answer's chunks only.
"""

from __future__ import annotations

import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from spade_core.app.http_reads import (
    IDENTITY,
    AnswerTooLarge,
    AnswerTooSlow,
    bound_by_deadlines,
    read_capped,
    request_deadline,
)
from spade_core.errors import SpadeError

from ..errors import LLMBackendError, LLMRequestRejected
from .base import ChatBackend, Completion, Conversation, SamplingRequest, apply_stop

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Answers that refuse one request for what it holds (the server serves others).
REQUEST_FAULT_STATUS = frozenset({400, 413, 422})
#: Default largest answer read, in bytes: about ten times a completion of 32k tokens with
#: per-token logprobs (~100 bytes of JSON a token).
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: How much of an error answer is read for its message.
ERROR_BODY_BYTES = 64 * 1024


@dataclass
class TokenUsage:
    """Running totals over the backend's lifetime."""

    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class OpenAIBackend(ChatBackend):
    """:class:`~spade_designer.llm.base.LLMBackend` over ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000/v1",
        model: str = "default",
        *,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        logprobs: bool = False,
        name: str = "openai",
        transport: Any = None,
    ) -> None:
        import httpx

        if concurrency < 1:
            raise LLMBackendError(f"concurrency must be >= 1, got {concurrency}", backend=name)
        if max_retries < 0 or timeout_s <= 0 or backoff_s < 0:
            raise LLMBackendError("max_retries and backoff_s must be >= 0 and timeout_s > 0", backend=name)
        if isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int) or max_response_bytes < 1:
            raise LLMBackendError(f"max_response_bytes must be a positive integer, got {max_response_bytes!r}", backend=name)
        self.name = name
        self.model_name = model
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.logprobs = logprobs
        self.usage = TokenUsage()
        self._usage_lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s),
            headers=headers,
            limits=httpx.Limits(max_connections=concurrency),
            transport=transport,
        )
        #: Whether every socket operation is bounded by the request's deadline (else only
        #: the answer's chunks are checked against it).
        self.deadline_bounds_sockets = transport is None and bound_by_deadlines(self._client)

    def close(self) -> None:
        self._client.close()

    def generate(self, conversations: list[Conversation], sampling: SamplingRequest) -> list[Completion]:
        def one(i: int) -> Completion:
            body: dict[str, Any] = {
                "model": self.model_name,
                "messages": conversations[i],
                "max_tokens": sampling.max_new_tokens,
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                "n": 1,
            }
            if sampling.seed is not None:
                body["seed"] = sampling.item_seed(i)  # distinct but reproducible per item
            if sampling.stop:
                body["stop"] = list(sampling.stop)
            if self.logprobs:
                body["logprobs"] = True
            return self._parse(self.chat_completion(body), sampling.stop)

        if len(conversations) == 1:
            return [one(0)]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(conversations))) as pool:
            return list(pool.map(one, range(len(conversations))))

    def chat_completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to the server's ``/chat/completions`` and return its decoded answer,
        through this backend's request path (retries, deadline, size limit): for callers that
        need what ``chat`` does not carry (tool declarations, ``tool_calls`` in the reply)."""
        import httpx

        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            wait: float | None = None
            deadline = time.monotonic() + self.timeout_s
            try:
                with request_deadline(deadline), self._client.stream("POST", url, json=body, headers=IDENTITY) as resp:
                    if resp.status_code == 200:
                        raw = read_capped(resp, self.max_response_bytes, source=url, deadline=deadline,
                                          deadline_s=self.timeout_s)
                    else:
                        problem = f"HTTP {resp.status_code}: {self._error_text(resp, url, deadline)[:300]}"
                        retry_after = resp.headers.get("retry-after")
            except AnswerTooLarge as exc:  # it would answer the same again: not retried
                raise LLMBackendError(f"{exc} (max_response_bytes)", backend=self.name) from None
            except AnswerTooSlow:
                problem = f"Timeout: no complete answer within the {self.timeout_s:g} s deadline (timeout_s)"
            except SpadeError as exc:  # an answer this client cannot read (its encoding, corrupt gzip)
                raise LLMBackendError(str(exc), backend=self.name) from None
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                if isinstance(exc, httpx.TimeoutException) and time.monotonic() >= deadline - 0.05:
                    problem = f"Timeout: no complete answer within the {self.timeout_s:g} s deadline (timeout_s)"
                else:
                    problem = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    try:
                        data = json.loads(raw)
                    except ValueError:
                        raise LLMBackendError(f"{url} answered 200 with a body that is not JSON", backend=self.name) from None
                    with self._usage_lock:
                        self.usage.requests += 1
                        self.usage.retries += attempt
                    return data
                if resp.status_code not in RETRYABLE_STATUS:
                    # 400/413/422...: this request's fault; 401/403/404: every request's.
                    error = LLMRequestRejected if resp.status_code in REQUEST_FAULT_STATUS else LLMBackendError
                    raise error(f"{url} rejected the request: {problem}", backend=self.name)
                wait = _retry_after(retry_after)
            if attempt >= self.max_retries:
                with self._usage_lock:
                    self.usage.retries += attempt
                raise LLMBackendError(
                    f"{url} failed after {attempt + 1} attempts; last error: {problem}", backend=self.name
                )
            if wait is None:
                wait = min(self.max_backoff_s, self.backoff_s * 2**attempt) * (0.5 + random.random() / 2)
            time.sleep(wait)
            attempt += 1

    @staticmethod
    def _error_text(resp: Any, url: str, deadline: float) -> str:
        """The start of an error answer, read within ``ERROR_BODY_BYTES`` and the deadline."""
        try:
            return read_capped(resp, ERROR_BODY_BYTES, source=url, deadline=deadline).decode("utf-8", "replace")
        except AnswerTooLarge:
            return f"(an error answer over {ERROR_BODY_BYTES:,} bytes, not read)"

    def _parse(self, data: dict[str, Any], stop: tuple[str, ...]) -> Completion:
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise LLMBackendError(
                f"response has no choices[0].message.content: {str(data)[:200]}", backend=self.name
            ) from None
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        with self._usage_lock:
            self.usage.prompt_tokens += prompt_tokens
            self.usage.completion_tokens += completion_tokens
        logprobs = None
        content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
        if content:
            logprobs = [float(t["logprob"]) for t in content]
        text, stopped = apply_stop(text, stop)
        finish = choice.get("finish_reason") or ("stop" if stopped else "length")
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=str(finish),
            logprobs=logprobs,
        )


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, min(float(value), 60.0))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
