"""The OpenAI-compatible backend against a real HTTP server on loopback."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from spade_designer.errors import LLMBackendError
from spade_designer.llm import OpenAIBackend


class ChatServer:
    """A tiny chat-completions server: echoes the last user message; scripted failures."""

    def __init__(self, failures: list[int] | None = None, delay_s: float = 0.0, body: str | None = None):
        self.failures = list(failures or [])
        self.delay_s = delay_s
        self.body = body
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **payload})
                    failure = server.failures.pop(0) if server.failures else None
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    time.sleep(server.delay_s)
                    if failure is not None:
                        self.send_response(failure)
                        self.send_header("Retry-After", "0")
                        self.end_headers()
                        self.wfile.write(b'{"error": "scripted failure"}')
                        return
                    text = server.body if server.body is not None else "echo: " + payload["messages"][-1]["content"]
                    data = {
                        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                                     "logprobs": {"content": [{"token": "e", "logprob": -0.5}]}}],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                    }
                    raw = json.dumps(data).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def conv(text):
    return [{"role": "user", "content": text}]


def test_batch_comes_back_in_order_with_token_accounting():
    with ChatServer() as server:
        backend = OpenAIBackend(server.url, "m", api_key="secret", concurrency=4, logprobs=True)
        out = backend.chat([conv(f"q{i}") for i in range(6)], max_new_tokens=20, temperature=0.5, seed=10, stop=["X"])
    assert [c.text for c in out] == [f"echo: q{i}" for i in range(6)]
    assert all(c.prompt_tokens == 7 and c.completion_tokens == 3 for c in out)
    assert out[0].logprobs == [-0.5]
    assert backend.usage.requests == 6 and backend.usage.total_tokens == 60
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer secret"
    assert first["max_tokens"] == 20 and first["stop"] == ["X"] and first["model"] == "m"
    assert sorted(r["seed"] for r in server.requests) == list(range(10, 16))


def test_requests_run_concurrently_up_to_the_limit():
    with ChatServer(delay_s=0.2) as server:
        OpenAIBackend(server.url, concurrency=3).chat([conv(str(i)) for i in range(6)])
    assert server.max_in_flight == 3


def test_retryable_failures_are_retried_with_backoff():
    with ChatServer(failures=[503, 429]) as server:
        backend = OpenAIBackend(server.url, max_retries=3, backoff_s=0.01)
        out = backend.chat([conv("hello")])
    assert out[0].text == "echo: hello"
    assert backend.usage.retries == 2 and len(server.requests) == 3


def test_retries_give_up_with_the_last_error():
    with ChatServer(failures=[500, 500, 500]) as server:
        backend = OpenAIBackend(server.url, max_retries=2, backoff_s=0.01)
        with pytest.raises(LLMBackendError, match=r"after 3 attempts.*HTTP 500"):
            backend.chat([conv("x")])


def test_client_errors_fail_at_once():
    with ChatServer(failures=[400]) as server:
        backend = OpenAIBackend(server.url, max_retries=5, backoff_s=0.01)
        with pytest.raises(LLMBackendError, match="HTTP 400"):
            backend.chat([conv("x")])
    assert len(server.requests) == 1


def test_timeouts_are_retried_then_reported():
    with ChatServer(delay_s=0.5) as server:
        backend = OpenAIBackend(server.url, timeout_s=0.1, max_retries=1, backoff_s=0.01)
        with pytest.raises(LLMBackendError, match="Timeout"):
            backend.chat([conv("x")])


def test_unreachable_endpoint_is_a_backend_error():
    backend = OpenAIBackend("http://127.0.0.1:9/v1", max_retries=0, timeout_s=1)
    with pytest.raises(LLMBackendError, match="failed after 1 attempts"):
        backend.chat([conv("x")])


def test_reply_without_choices_is_reported():
    with ChatServer() as broken:
        broken.httpd.RequestHandlerClass.do_POST = _answer_without_choices
        with pytest.raises(LLMBackendError, match="choices"):
            OpenAIBackend(broken.url).chat([conv("x")])


def _answer_without_choices(handler):
    handler.rfile.read(int(handler.headers["Content-Length"]))
    raw = b'{"object": "chat.completion"}'
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


# --- a server that is not trusted with the client's memory or time ------------------------


def _peak_bytes_of(call) -> tuple[BaseException | None, int]:
    """Run ``call``; what it raised and the peak of Python memory it allocated."""
    import tracemalloc

    tracemalloc.start()
    try:
        call()
    except BaseException as exc:
        return exc, tracemalloc.get_traced_memory()[1]
    else:
        return None, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "undeclared"])
def test_an_answer_over_the_byte_limit_is_refused_without_being_read(declare):
    from hostile_server import hostile_server

    with hostile_server(size=64 << 20, declare=declare) as url:
        backend = OpenAIBackend(f"{url}/v1", max_retries=3, max_response_bytes=1 << 20)
        started = time.monotonic()
        error, peak = _peak_bytes_of(lambda: backend.chat([conv("x")]))
    assert isinstance(error, LLMBackendError), error
    assert "answered more than the 1,048,576-byte limit" in str(error) and "max_response_bytes" in str(error)
    if declare:
        assert "it declared 67,108,864 bytes" in str(error)
    assert peak < 8 << 20, f"{peak:,} bytes held for a 64 MiB answer"
    assert time.monotonic() - started < 10  # refused at once, not retried


def test_timeout_is_a_deadline_for_the_whole_request_not_each_read():
    from hostile_server import hostile_server

    # 200 bytes, one every 50 ms: each read is quick, the answer takes 10 s.
    with hostile_server(size=200, chunk=1, delay_s=0.05) as url:
        backend = OpenAIBackend(f"{url}/v1", timeout_s=0.5, max_retries=1, backoff_s=0.01)
        started = time.monotonic()
        with pytest.raises(LLMBackendError, match=r"failed after 2 attempts.*no complete answer within the 0.5 s deadline"):
            backend.chat([conv("x")])
    assert time.monotonic() - started < 3


def test_the_deadline_also_bounds_headers_trickled_a_line_at_a_time():
    from hostile_server import hostile_server

    # 200 header lines, one every 50 ms: each read is quick, the headers take 10 s.
    with hostile_server(size=10, header_lines=200, delay_s=0.05) as url:
        backend = OpenAIBackend(f"{url}/v1", timeout_s=0.5, max_retries=0)
        assert backend.deadline_bounds_sockets
        started = time.monotonic()
        with pytest.raises(LLMBackendError) as caught:
            backend.chat([conv("x")])
        took = time.monotonic() - started
    assert took < 3, f"the headers held the request {took:.1f} s"
    assert "no complete answer within the 0.5 s deadline" in str(caught.value)


def test_max_response_bytes_must_be_a_positive_integer():
    with pytest.raises(LLMBackendError, match="max_response_bytes must be a positive integer, got 0"):
        OpenAIBackend(max_response_bytes=0)
