r"""Compatibility with tool-use environments written for the reference implementation.

The reference designer writes subclasses of a base named ``ToolUseBaseEnv`` that its
loader puts in the namespace (the sources do not import it). Such a subclass:

* sets, in ``reset(seed)``, ``self._tools`` (``{name: {"description", "parameters"}}``),
  ``self._state`` and ``self._expected_answer``, and returns ``(observation, {})``;
* implements ``tool_<name>(**arguments)`` methods returning strings and ``solution()``
  returning a text (tool calls and the answer, not replayable actions).

:class:`ToolUseBaseEnv` here reproduces that protocol, as the reference describes it, so
such pools run unchanged: one ``<tool_call>`` per step (the first one), an ``<answer>``
compared with the expected answer (case-insensitively, or numerically within 0.01 after
dropping ``$`` and thousands separators), reward 1.0 and termination on a right answer,
-0.1 for a step without a parseable action, truncation at ``max_turns`` with the solution
revealed. Rewards therefore lie in [-0.1, 1], declared as the class attribute
``reward_range`` (the tool-use domain's range too).

Such sources load unchanged wherever the tool-use domain's code runs (``spade validate``,
``spade fuzz``, ``spade import``, ``gymnasium.make``): ``spade_tooluse.base`` lists the
name in ``SANDBOX_PRELUDE``, so the sandbox binds it as its loader did.

:func:`with_base_import` makes such a source loadable outside the sandbox too (trusted
in-process loaders), by adding ``from spade_tooluse.base import ToolUseBaseEnv`` when the
source uses the name without defining or importing it.

New environments should use :class:`spade_tooluse.base.ToolEnv` (multi-turn users, state
comparison against a replayed reference, replayable solutions).
"""

from __future__ import annotations

import ast
import functools
import json
import re
from typing import Any

from spade_core.actions import parse_tool_call
from spade_core.answers import numbers_match
from spade_core.errors import ActionFormatError

__all__ = ["REWARD_RANGE", "ToolUseBaseEnv", "with_base_import"]

REWARD_RANGE = (-0.1, 1.0)
FORMAT_PENALTY = -0.1
_FIRST_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FIRST_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


class ToolUseBaseEnv:
    """Base of reference-implementation tool-use environments (see the module docstring).

    Subclasses implement ``reset``, ``solution`` and ``tool_*`` methods; the constructor
    calls ``reset()`` once so the tools exist right away, as the reference base does.
    """

    #: Rewards lie in [-0.1, 1]: -0.1 for a step without a parseable action (the old Gym
    #: convention of declaring the range on the class, which the validator reads).
    reward_range = REWARD_RANGE

    def __init__(self, max_turns: int = 10, **kwargs: Any) -> None:
        self.max_turns = max_turns
        self.turn_count = 0
        self._tools: dict[str, dict[str, Any]] = {}
        self._state: dict[str, Any] = {}
        self._call_history: list[dict[str, Any]] = []
        self._expected_answer: Any = None
        self.reset()

    # -- what subclasses provide ---------------------------------------------------

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def solution(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement solution()")

    # -- tools ---------------------------------------------------------------------

    def get_tools(self) -> list[dict[str, Any]]:
        """``self._tools`` as OpenAI-format schemas."""
        out = []
        for name, spec in self._tools.items():
            spec = spec if isinstance(spec, dict) else {}
            out.append({
                "type": "function",
                "function": {
                    "name": name,
                    "description": spec.get("description", ""),
                    "parameters": spec.get("parameters", {"type": "object", "properties": {}}),
                },
            })
        return out

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Same as :meth:`get_tools` (the name SPADE's adapters look for)."""
        return self.get_tools()

    def execute_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one already-parsed call: ``{"output": str, "returncode": 0 | 1}``."""
        method = getattr(self, "tool_" + name, None) if isinstance(name, str) else None
        if method is None:
            return {"output": f"Unknown tool '{name}'", "returncode": 1}
        try:
            result = method(**arguments)
        except Exception as exc:  # generated tool code fails in every way; report, don't raise
            return {"output": f"Error calling {name}: {exc}", "returncode": 1}
        self._call_history.append({"name": name, "arguments": arguments, "result": str(result)})
        return {"output": str(result), "returncode": 0}

    # -- the step protocol -----------------------------------------------------------

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Subclasses write reset() whole (the reference protocol: they never call the
        # base's), so the end of an episode is forgotten by wrapping theirs.
        super().__init_subclass__(**kwargs)
        reset = cls.__dict__.get("reset")
        if reset is not None:
            @functools.wraps(reset)
            def starts_an_episode(self: Any, *args: Any, **kw: Any) -> Any:
                self._episode_over = None
                return reset(self, *args, **kw)

            cls.reset = starts_an_episode  # type: ignore[method-assign]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One message; once a step ended the episode (a right answer, or out of turns),
        further steps pay nothing and keep it over until ``reset`` (SPADE's contract for
        a step after the end; the reference base does not say)."""
        over = getattr(self, "_episode_over", None)
        if over is not None:
            return "The episode is over.", 0.0, over[0], over[1], {}
        out = self._play(action)
        if out[2] or out[3]:
            self._episode_over = (out[2], out[3])
        return out

    def _play(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn_count += 1
        out_of_turns = self.turn_count >= self.max_turns
        text = action if isinstance(action, str) else str(action)
        answer = _FIRST_ANSWER.search(text)
        if answer is not None:
            if self._check_answer(answer.group(1).strip()):
                return "Correct!", 1.0, True, False, {}
            if out_of_turns:
                return self._time_up("Wrong answer."), 0.0, False, True, {}
            return self._incorrect_answer_feedback(), 0.0, False, False, {}
        found = _FIRST_CALL.search(text)
        if found is None:
            if out_of_turns:
                return self._time_up("Time up."), 0.0, False, True, {}
            return ("Format error: use tools to call a function, or <answer>result</answer> to submit.",
                    FORMAT_PENALTY, False, False, {})
        try:
            call = parse_tool_call(found.group(1).strip())
        except ActionFormatError:
            if out_of_turns:
                return self._time_up("Time up."), 0.0, False, True, {}
            return "Format error: invalid tool call arguments.", FORMAT_PENALTY, False, False, {}
        if getattr(self, "tool_" + call.name, None) is None:
            if out_of_turns:
                return self._time_up("Time up."), 0.0, False, True, {}
            return f"Unknown tool '{call.name}'. Available: {', '.join(self._tools)}", 0.0, False, False, {}
        result = self.execute_tool(call.name, dict(call.arguments))
        obs = "Tool result:\n" + result["output"]
        if out_of_turns:
            return self._time_up(obs + "\n\nTime up."), 0.0, False, True, {}
        return obs, 0.0, False, False, {}

    def close(self) -> None:
        """Nothing to release."""

    # -- hooks subclasses may override ----------------------------------------------

    def _check_answer(self, answer: str) -> bool:
        given, expected = str(answer).strip(), str(self._expected_answer).strip()
        if given.lower() == expected.lower():
            return True
        return numbers_match(_as_number_text(given), _as_number_text(expected), abs_tol=0.01)

    def _incorrect_answer_feedback(self) -> str:
        messages = getattr(self, "_user_messages", None)
        current = getattr(self, "_current_msg", None)
        if isinstance(messages, (list, tuple)) and isinstance(current, int) and 0 <= current < len(messages):
            return (
                f"Incorrect. Keep using tools. You are still on step {current + 1}/{len(messages)}: "
                f"{json.dumps(str(messages[current]))}. Complete it with the tools before answering."
            )
        return "Incorrect. Keep using tools."

    def _obs_suffix(self) -> str:
        """Kept for old subclasses that append it to observations; tools travel as schemas."""
        return ""

    def _time_up(self, prefix: str) -> str:
        try:
            reveal = str(self.solution())
        except Exception as exc:  # a broken solution() must not turn truncation into a crash
            reveal = f"(solution unavailable: {type(exc).__name__})"
        return f"{prefix} Solution:\n{reveal}"


def _as_number_text(text: str) -> str:
    return text.replace("$", "").replace(",", "").strip()


def with_base_import(source: str) -> str:
    """``source`` with ``from spade_tooluse.base import ToolUseBaseEnv`` prepended when it
    subclasses ``ToolUseBaseEnv`` without defining or importing it; otherwise unchanged.

    A source that does not parse is returned unchanged (the loader reports the error).
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    uses = any(
        isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "ToolUseBaseEnv" for b in node.bases)
        for node in tree.body
    )
    bound = any(
        (isinstance(node, ast.ClassDef) and node.name == "ToolUseBaseEnv")
        or (isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == "ToolUseBaseEnv" for a in node.names))
        for node in tree.body
    )
    if not uses or bound:
        return source
    # after any ``from __future__`` imports, which must stay first
    future_end = max(
        (n.end_lineno or n.lineno for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"),
        default=0,
    )
    lines = source.splitlines(keepends=True)
    return "".join(lines[:future_end]) + "from spade_tooluse.base import ToolUseBaseEnv\n" + "".join(lines[future_end:])
