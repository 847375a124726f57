"""What the tool-use conversation suites (``tau2_bench``, ``acebench_agent``) share: the
simulated user behind an OpenAI-compatible endpoint, and reading JSON files with errors
that name the file and the field.

The agent under test is the policy ``spade eval`` plays (any ``--policy``, batched by the
harness like every suite); the simulated user is a second model, reached through the same
``openai`` LLM backend, that the environment asks for the user's next message whenever
the agent speaks to the user instead of calling a tool.
"""

from __future__ import annotations

import json
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


def resolve_user_backend(user: Any, plugins: Any, *, suite: str) -> Any:
    """The simulated user's backend: an object with ``chat`` as given (tests, callers that
    built one), or ``openai:BASE_URL#MODEL`` made through the plugins' ``openai`` backend."""
    if user is not None and hasattr(user, "chat"):
        return user
    if not isinstance(user, str) or not user.strip():
        raise SuiteError(f"suite {suite} plays a conversation with a simulated user: give its model with "
                         "-o user=openai:BASE_URL#MODEL (any OpenAI-compatible endpoint)")
    from .policy import PolicyError, make_backend, parse_policy

    spec = parse_policy(user)
    if spec.backend != "openai":
        raise PolicyError(f"suite {suite}: the simulated user is reached through an OpenAI-compatible endpoint; "
                          f"-o user= takes openai:BASE_URL#MODEL, got {user!r}")
    if plugins is None:
        raise SuiteError(f"suite {suite}: no plugin set to build the user's openai backend with")
    return make_backend(spec, plugins)


class SimulatedUser:
    """One conversation of the simulated user: its system prompt, then the agent's messages
    as the user model's ``user`` turns and its own replies as ``assistant`` turns (the roles
    flipped, as both benchmarks do). ``opening`` is what the agent is taken to have said first."""

    def __init__(self, backend: Any, system_prompt: str, *, max_new_tokens: int = 512,
                 temperature: float = 0.0) -> None:
        self.backend = backend
        self.messages: list[dict[str, str]] = [{"role": "system", "content": system_prompt}]
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature

    def reply(self, agent_text: str) -> str:
        """The user's answer to the agent's message ``agent_text``."""
        self.messages.append({"role": "user", "content": agent_text})
        completion = self.backend.chat([list(self.messages)], max_new_tokens=self.max_new_tokens,
                                       temperature=self.temperature)[0]
        text = str(completion.text).strip()
        self.messages.append({"role": "assistant", "content": text})
        return text
