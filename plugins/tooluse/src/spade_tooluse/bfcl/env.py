r"""One BFCL-v4 multi-turn entry as a reference-format environment (:class:`BfclEnv`).

Episode protocol (the benchmark's, in our tag format):

* the first observation lists the tools visible now (OpenAI format) and the first user
  message; in ``miss_func`` entries some functions are withheld until the turn the
  benchmark reveals them (that turn has no user message; the benchmark's "new functions"
  prompt is shown instead);
* each agent message's ``<tool_call>`` tags are executed, in order, on this episode's API
  instances; results are formatted as the benchmark formats them;
* a message without tool calls (or one holding ``<answer>``, or one whose tool calls do
  not parse) ends the user turn, as the benchmark ends a turn on an empty or undecodable
  response; more than :data:`STEP_LIMIT` calling messages in one turn force-terminate the
  episode (the benchmark fails such entries).

Each ended turn is graded by :func:`.grading.grade_turn`. ``info["bfcl_valid"]`` is the
entry's verdict (every graded turn passed). The reward is the fraction of graded turns
passed before the first failure, so 1.0 exactly when the checker would accept the entry.
``trajectory`` holds the calls the agent made, per turn and message, in the shape the
official checker reads (:mod:`.official`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from spade_core.actions import ToolCall, format_tool_calls, parse_tool_action
from spade_core.errors import ActionFormatError

from .execution import ApiSet
from .grading import TurnVerdict, grade_turn
from .loader import BfclDataError, BfclEntry, function_docs, get_entry, openai_schema

#: Calling messages allowed per user turn before the episode is force-terminated (the
#: benchmark's limit).
STEP_LIMIT = 20
#: What the benchmark says when it reveals withheld functions.
REVEAL_MESSAGE = "I have updated some more functions you can choose from. What about now?"

#: A trajectory: per user turn, per agent message, the calls of that message.
Trajectory = list[list[list[ToolCall]]]


@dataclass
class _Episode:
    agent: ApiSet
    truth: ApiSet
    turn: int = 0
    visible: list[str] = field(default_factory=list)  # visible function names, in order
    results: list[str] = field(default_factory=list)  # every agent call result so far
    calling_steps: int = 0  # calling messages in the current turn
    verdicts: list[TurnVerdict] = field(default_factory=list)
    trajectory: Trajectory = field(default_factory=lambda: [[]])
    done: bool = False
    force_terminated: bool = False


class BfclEnv:
    """One BFCL-v4 multi-turn entry as a reference-format environment.

    ``stop_on_failure`` ends the episode at the first failed graded turn (the benchmark's
    verdict is settled then).
    """

    def __init__(self, entry: BfclEntry | str, *, stop_on_failure: bool = True) -> None:
        self.entry = get_entry(entry) if isinstance(entry, str) else entry
        self.stop_on_failure = stop_on_failure
        self._ep: _Episode | None = None
        withheld = {n for names in self.entry.missed_functions.values() for n in names}
        docs = [d for c in self.entry.involved_classes for d in function_docs(c, self.entry.data_root)]
        self._docs = {d["name"]: d for d in docs}
        self._initially_visible = [d["name"] for d in docs if d["name"] not in withheld]

    # -- contract --------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Fresh agent and answer instances from the entry's initial config (``seed`` is
        accepted for the contract; the entry itself is deterministic)."""
        self._ep = _Episode(agent=ApiSet(self.entry), truth=ApiSet(self.entry), visible=list(self._initially_visible))
        intro = (
            "You are an assistant that fulfils the user's requests by calling functions.\n"
            f"Functions (OpenAI format): {json.dumps(self.get_tool_schemas(), ensure_ascii=False)}\n"
            'Call functions with <tool_call>{"name": "<function>", "arguments": {...}}</tool_call>; several per '
            "message are allowed and run in order. When you have done all you can for the current request, reply "
            "without a tool call (for example <answer>...</answer>) to hand the turn back to the user."
        )
        return intro + "\n\n" + self._turn_prompt(0), self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require_episode()
        if ep.done:
            return "The episode is over.", self._reward(), True, False, self._info()
        try:
            parsed = parse_tool_action(action if isinstance(action, str) else str(action))
        except ActionFormatError as exc:
            # The benchmark ends the turn on an undecodable response.
            return self._end_turn(f"Could not parse your tool call ({exc}); the turn ends.")
        parts = []
        if parsed.calls:
            ep.calling_steps += 1
            # Copies: an API method may keep an argument (a list) and change it later, as
            # TwitterAPI.mention extends the mentions list post_tweet stored.
            ep.trajectory[ep.turn].append([ToolCall(c.name, copy.deepcopy(c.arguments)) for c in parsed.calls])
            for c in parsed.calls:
                result = ep.agent.execute(c)
                ep.results.append(result)
                parts.append(
                    "<tool_response>" + json.dumps({"name": c.name, "content": result}, ensure_ascii=False) + "</tool_response>"
                )
            if ep.calling_steps > STEP_LIMIT:
                ep.force_terminated = True
                ep.done = True
                ep.verdicts.append(TurnVerdict(ep.turn, True, False, f"force-terminated after {STEP_LIMIT} steps"))
                return "\n".join(parts) + "\n\nToo many steps in one turn; the episode ends.", self._reward(), True, False, self._info()
        if parsed.calls and parsed.answer is None:
            return "\n".join(parts), self._reward(), False, False, self._info()
        return self._end_turn("\n".join(parts))

    def solution(self) -> list[str]:
        """Per turn, one action with the turn's ground-truth calls and an answer that ends it."""
        ep = self._ep or _Episode(agent=ApiSet(self.entry), truth=ApiSet(self.entry))
        return [
            format_tool_calls([ep.agent.to_tool_call(t) for t in turn], answer="Done." if turn else "I cannot do that with the available functions.")
            for turn in self.entry.ground_truth
        ]

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The functions visible now, OpenAI format."""
        names = self._ep.visible if self._ep is not None else self._initially_visible
        return [openai_schema(self._docs[n]) for n in names]

    def close(self) -> None:
        self._ep = None

    @property
    def trajectory(self) -> Trajectory:
        """The agent's calls so far: per user turn begun, per calling message, its calls."""
        return [[list(step) for step in turn] for turn in self._require_episode().trajectory]

    # -- internals -------------------------------------------------------------------

    def _require_episode(self) -> _Episode:
        if self._ep is None:
            raise BfclDataError(f"{self.entry.id}: step() called before reset()")
        return self._ep

    def _turn_prompt(self, k: int) -> str:
        ep = self._require_episode()
        revealed = self.entry.missed_functions.get(k, ())
        if revealed:
            ep.visible.extend(n for n in revealed if n not in ep.visible)
            schemas = [openai_schema(self._docs[n]) for n in revealed]
            return f"New functions (OpenAI format): {json.dumps(schemas, ensure_ascii=False)}\nUser: {REVEAL_MESSAGE}"
        return "\n".join(f"User: {m}" for m in self.entry.questions[k])

    def _grade(self, k: int) -> TurnVerdict:
        ep = self._require_episode()
        return grade_turn(ep.agent, ep.truth, self.entry.ground_truth[k], index=k, calling_steps=ep.calling_steps,
                          results=ep.results)

    def _end_turn(self, obs: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require_episode()
        verdict = self._grade(ep.turn)
        ep.verdicts.append(verdict)
        ep.turn += 1
        ep.calling_steps = 0
        failed = verdict.graded and not verdict.passed
        if ep.turn >= len(self.entry.ground_truth) or (failed and self.stop_on_failure):
            ep.done = True
            return (obs + "\n\nThe conversation is over.").strip(), self._reward(), True, False, self._info()
        ep.trajectory.append([])
        return (obs + "\n\n" + self._turn_prompt(ep.turn)).strip(), self._reward(), False, False, self._info()

    def _reward(self) -> float:
        ep = self._require_episode()
        graded = sum(1 for t in self.entry.ground_truth if t)
        if graded == 0:
            return 1.0 if ep.done and not ep.force_terminated else 0.0
        passed = 0
        for v in ep.verdicts:
            if v.graded:
                if not v.passed:
                    break
                passed += 1
        return passed / graded

    def _info(self) -> dict[str, Any]:
        ep = self._require_episode()
        valid = ep.done and not ep.force_terminated and all(v.passed for v in ep.verdicts)
        return {
            "entry_id": self.entry.id,
            "turn": ep.turn,
            "turns_total": len(self.entry.ground_truth),
            "verdicts": [v.to_dict() for v in ep.verdicts],
            "bfcl_valid": bool(valid and len(ep.verdicts) == len(self.entry.ground_truth)),
            "force_terminated": ep.force_terminated,
        }
