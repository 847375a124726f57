"""What the tool-use conversation suites (``tau2_bench``, ``acebench_agent``) share: the
simulated user behind an OpenAI-compatible endpoint, and reading JSON files with errors
that name the file and the field.

The agent under test is the policy ``spade eval`` plays (any ``--policy``, batched by the
harness like every suite); the simulated user is a second model, reached through the same
``openai`` LLM backend, that the environment asks for the user's next message whenever
the agent speaks to the user instead of calling a tool.

A dual-control domain (tau2-bench's telecom) also gives the simulated user tools of its
own: :class:`SimulatedUser` then sends their OpenAI declarations with each request
(``tools``) and reads the model's ``tool_calls`` back (:class:`UserTurn`); the environment
runs them and hands the results back (:meth:`SimulatedUser.tool_results`) before the user
says anything to the agent. That needs the ``openai`` backend (an OpenAI-compatible
endpoint); a user without tools goes through any backend's ``chat`` as before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .suites import SuiteError


class BenchmarkDataError(SuiteError):
    """A benchmark file that is not in the published format: names the file and the field."""


def read_json(path: Path, error: type[BenchmarkDataError] = BenchmarkDataError) -> Any:
    """The JSON value of ``path``; :class:`BenchmarkDataError` naming it otherwise."""
    if not path.is_file():
        raise error(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path}: not JSON ({exc})") from None


def read_json_lines(path: Path, error: type[BenchmarkDataError] = BenchmarkDataError) -> list[Any]:
    """One JSON value per non-blank line of ``path`` (ACEBench's files); a damaged line is
    an error naming the file and the line."""
    if not path.is_file():
        raise error(f"{path}: no such file")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise error(f"{path}: line {number} is not JSON ({exc})") from None
    return rows


def resolve_endpoint(value: Any, plugins: Any, *, suite: str, option: str, role: str, needs: str = "chat",
                     error: type[Exception] = SuiteError) -> Any:
    """The model a suite reaches through an OpenAI-compatible endpoint, from ``-o
    OPTION=``: an object with the method ``needs`` as given (tests, callers that built one),
    or ``openai:BASE_URL#MODEL`` made through the plugins' ``openai`` backend. Anything
    else is an ``error`` naming the suite, the ``role`` and what ``-o OPTION=`` takes."""
    if value is not None and callable(getattr(value, needs, None)):
        return value
    if value is None or (isinstance(value, str) and not value.strip()):
        raise error(f"suite {suite} needs {role}'s model: give it with -o {option}=openai:BASE_URL#MODEL "
                    "(any OpenAI-compatible endpoint)")
    from .policy import make_backend, parse_policy

    spec = parse_policy(value) if isinstance(value, str) else None
    if spec is None or spec.backend != "openai":
        raise error(f"suite {suite}: {role} is reached through an OpenAI-compatible endpoint; "
                    f"-o {option}= takes openai:BASE_URL#MODEL, got {value!r}")
    if plugins is None:
        raise error(f"suite {suite}: no plugin set to build the openai backend of {role} with")
    return make_backend(spec, plugins)


def resolve_user_backend(user: Any, plugins: Any, *, suite: str) -> Any:
    """The simulated user's backend (``-o user=``; :func:`resolve_endpoint`)."""
    return resolve_endpoint(user, plugins, suite=suite, option="user", role="the simulated user")


@dataclass(frozen=True)
class UserToolCall:
    """One tool call of the simulated user: ``arguments`` is ``None`` when the model's
    arguments were not a JSON object (``raw_arguments`` holds what it wrote)."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str


@dataclass(frozen=True)
class UserTurn:
    """What the simulated user produced: a message for the agent, or tool calls (any text
    written with them is the user's own and never reaches the agent)."""

    text: str
    tool_calls: tuple[UserToolCall, ...] = ()


def _tool_completion(backend: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                     max_new_tokens: int, temperature: float) -> UserTurn:
    """One chat completion with tool declarations, through the ``openai`` backend's request
    path (its retries, deadline and size limit); the reply's text and tool calls."""
    from spade_designer.llm.openai_backend import OpenAIBackend

    if not isinstance(backend, OpenAIBackend):
        raise SuiteError(f"a simulated user with tools (a dual-control domain) needs the openai backend "
                         f"(-o user=openai:BASE_URL#MODEL), got {type(backend).__name__}")
    data = backend.chat_completion({"model": backend.model_name, "messages": messages, "tools": tools,
                          "max_tokens": max_new_tokens, "temperature": temperature, "n": 1})
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise SuiteError(f"the user model's answer has no choices[0].message: {str(data)[:200]}") from None
    calls = []
    for k, raw in enumerate(message.get("tool_calls") or []):
        function = (raw or {}).get("function") or {}
        text = function.get("arguments")
        arguments: dict[str, Any] | None
        if isinstance(text, dict):
            arguments, text = text, json.dumps(text)
        else:
            text = "" if text is None else str(text)
            try:
                arguments = json.loads(text) if text.strip() else {}
            except json.JSONDecodeError:
                arguments = None
            if not isinstance(arguments, dict):
                arguments = None
        calls.append(UserToolCall(str(raw.get("id") or f"call_{k}"), str(function.get("name") or ""), arguments, text))
    return UserTurn(str(message.get("content") or "").strip(), tuple(calls))


class SimulatedUser:
    """One conversation of the simulated user: its system prompt, then the agent's messages
    as the user model's ``user`` turns and its own replies as ``assistant`` turns (the roles
    flipped, as both benchmarks do). ``opening`` is what the agent is taken to have said first.

    Given ``tools`` (OpenAI declarations), the user may answer with tool calls: its own
    ``assistant`` turn then carries them and the results follow as ``tool`` turns."""

    def __init__(self, backend: Any, system_prompt: str, *, max_new_tokens: int = 512,
                 temperature: float = 0.0, tools: Sequence[dict[str, Any]] | None = None) -> None:
        self.backend = backend
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.tools = list(tools) if tools else None

    def reply(self, agent_text: str) -> str:
        """The user's answer to the agent's message ``agent_text`` (a user without tools)."""
        return self.respond(agent_text).text

    def respond(self, agent_text: str) -> UserTurn:
        """The user's turn after the agent's message ``agent_text``: a message or tool calls."""
        self.messages.append({"role": "user", "content": agent_text})
        return self._generate()

    def tool_results(self, results: Sequence[tuple[str, str]]) -> UserTurn:
        """Hand the results of the user's last tool calls back (``(call id, result)`` each,
        in order) and get its next turn."""
        for call_id, content in results:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return self._generate()

    def _generate(self) -> UserTurn:
        if self.tools is None:
            completion = self.backend.chat([list(self.messages)], max_new_tokens=self.max_new_tokens,
                                            temperature=self.temperature)[0]
            turn = UserTurn(str(completion.text).strip())
        else:
            turn = _tool_completion(self.backend, list(self.messages), self.tools,
                                    max_new_tokens=self.max_new_tokens, temperature=self.temperature)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.raw_arguments}}
                                     for c in turn.tool_calls]
        self.messages.append(message)
        return turn
