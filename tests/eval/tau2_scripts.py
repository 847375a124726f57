"""Playing the tau2 suite from scripts: the agent answers from one queue of replies, the
simulated user from another, each episode's taken in item order (the tau2 tests of every
domain share this)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from spade_core.evaluation import SuiteContext
from spade_designer.llm.openai_backend import OpenAIBackend
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate

from spade_eval import tau2

CTX = SuiteContext(None, None)


def write_domain(root: Path, domain: str, tasks: Any, db: Any, policy: str) -> Path:
    """``root`` holding one domain folder in the benchmark's layout (``tasks.json``,
    ``db.json``, ``policy.md``); returns ``root``."""
    folder = root / domain
    folder.mkdir(parents=True)
    (folder / "tasks.json").write_text(json.dumps(tasks, indent=2))
    (folder / "db.json").write_text(json.dumps(db, indent=2))
    (folder / "policy.md").write_text(policy)
    return root


class ScriptedEndpoint:
    """An OpenAI-compatible ``/chat/completions`` double (the simulated user, or the judge on
    its error paths): each request gets the next scripted turn (a message, or tool calls, or
    a whole answer object given as a dict); every request body is kept."""

    def __init__(self, turns: list) -> None:
        self.turns = deque(turns)
        self.requests: list[dict] = []
        self.calls = 0

    def answer(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        turn = self.turns.popleft()
        if isinstance(turn, dict):
            return httpx.Response(200, json=turn)
        if isinstance(turn, str):
            message = {"role": "assistant", "content": turn}
        else:
            calls = []
            for name, arguments in turn:
                self.calls += 1
                raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
                calls.append({"id": f"call_{self.calls}", "type": "function",
                              "function": {"name": name, "arguments": raw}})
            message = {"role": "assistant", "content": None, "tool_calls": calls}
        return httpx.Response(200, json={"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

    def backend(self, model: str = "user") -> OpenAIBackend:
        return OpenAIBackend(f"http://{model}.invalid/v1", model, transport=httpx.MockTransport(self.answer),
                             max_retries=0)


def replay_user(said: list[Any]) -> tuple[ReplayBackend, ReplayBackend]:
    """A user answering from ``said`` in order: (the backend items get, the same backend)."""
    user = ReplayBackend(said, name="user")
    return user, user


def play_scripts(domains: Path, scripts: dict[str, tuple[list[Any], list[Any]]], *, size: int = 1,
                 user: Callable[[list[Any]], tuple[Any, Any]] = replay_user,
                 **options: Any) -> tuple[Any, ReplayBackend, Any, list[Any]]:
    """Evaluate with the agent and the user answering from ``scripts`` (task id -> (agent
    replies, user replies); episodes one at a time, in item order, so both queues are consumed
    in order). ``user`` makes the user side from its whole queue: (the backend the items
    get, the handle the test keeps). Returns (result, agent backend, user handle, items)."""
    agent_out: list[Any] = []
    user_out: list[Any] = []
    for item in tau2.tau2_items(CTX, size=size, data=str(domains), user=ReplayBackend(), **options):
        agent, said = scripts[item.label.split("/", 1)[1]]
        agent_out += agent
        user_out += said
    backend, handle = user(user_out)
    items = tau2.tau2_items(CTX, size=size, data=str(domains), user=backend, **options)
    agent_backend = ReplayBackend(agent_out, name="agent")
    result = evaluate(agent_backend, items, suite="tau2_bench", size=size, concurrency=1)
    return result, agent_backend, handle, items
