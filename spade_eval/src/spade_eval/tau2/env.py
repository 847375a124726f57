"""One tau2-bench task as a reference-format environment: the conversation between the
agent under test and the simulated user, the tool calls of both run on the episode's world,
and the score when it ends (the ``NL_ASSERTION`` component's judge asked then, :mod:`.judge`)."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from spade_core.actions import ToolCall, parse_tool_action, without_tagged
from spade_core.errors import ActionFormatError

from ..dialogue import SimulatedUser, UserToolCall
from .domains import DOMAINS, USER_SIDES, check_supported
from .judge import NLJudge, Verdict, all_met
from .scoring import actions_matched, assertions_hold, communicated, db_matches
from .tasks import Tau2Task
from .world import World, make_world, run_tool

AGENT_GREETING = "Hi! How can I help you today?"
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
#: Failed tool calls after which the episode ends prematurely (the benchmark's default).
MAX_ERRORS = 10
#: Agent messages per episode before it is cut off (the harness's turn limit).
MAX_AGENT_TURNS = 60
#: Rounds of tool calls the simulated user of a dual-control domain may make in one episode
#: before it is cut off (the benchmark bounds every step by its ``max_steps``).
MAX_USER_TOOL_ROUNDS = 60

USER_GUIDELINES = """You play a customer talking to a customer-service agent, following the scenario below.
- Write only the customer's next message, one short message at a time, in your own words.
- Give the agent information only when it is needed; never invent what the scenario does not say.
- Follow the scenario's instructions about what to accept, refuse or insist on.
- When your request is fully handled, or the conversation cannot go further, reply with ###STOP###.
- If you are transferred to a human agent, reply with ###TRANSFER###; if the scenario does not say
  how to answer something essential, reply with ###OUT-OF-SCOPE###."""

USER_TOOL_GUIDELINES = USER_GUIDELINES + """
- You also have tools that act on your own phone. Call one only when the agent asks you to do or check
  something on it, or when you need its result to answer the agent; never make up what a tool shows:
  tell the agent what its result said.
- In one turn, either call tools or write to the agent, not both. The agent never sees your tool calls
  or their results, only your messages.
- If the agent asks for several actions at once, say you can do one at a time and ask which first.
- If a tool call fails, correct it and try again."""


@dataclass
class _Episode:
    world: World
    user: SimulatedUser
    calls: list[ToolCall] = field(default_factory=list)
    agent_texts: list[str] = field(default_factory=list)
    #: The conversation as the judge reads it: (role, text) per message, ``assistant`` the
    #: agent, ``user`` the customer, ``tool`` a result of either's call.
    transcript: list[tuple[str, str]] = field(default_factory=list)
    #: The judge's verdicts and the transcript length they were given (asked once per end).
    judged: tuple[int, list[Verdict]] | None = None
    errors: int = 0
    user_tool_rounds: int = 0
    done: bool = False
    premature: bool = False

    @property
    def db(self) -> dict[str, Any]:
        return self.world.db

    @property
    def tools(self) -> Any:
        return self.world.tools


class Tau2Env:
    """One tau2-bench task as a reference-format environment (see the module docstring)."""

    def __init__(self, task: Tau2Task, base_db: dict[str, Any], policy: str, user_backend: Any,
                 base_user_db: dict[str, Any] | None = None, judge: NLJudge | None = None) -> None:
        check_supported(task)
        self.judge = judge if judge is not None else NLJudge(user_backend)
        if "NL_ASSERTION" in task.reward_basis and task.nl_assertions:
            self.judge.require_reachable(f"tau2 task {task.label}")
        self.task = task
        self.base_db = base_db
        self.base_user_db = base_user_db
        self.policy = policy
        self.user_backend = user_backend
        self.declared = DOMAINS[task.domain][1]
        self.user_side = USER_SIDES.get(task.domain)
        self._ep: _Episode | None = None

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        world = make_world(self.task, self.base_db, self.base_user_db)
        guidelines = USER_TOOL_GUIDELINES if self.user_side is not None else USER_GUIDELINES
        tools = list(self.user_side.declared.values()) if self.user_side is not None else None
        user = SimulatedUser(self.user_backend, f"{guidelines}\n\n<scenario>\n{self.task.instructions}\n</scenario>",
                             tools=tools)
        self._ep = _Episode(world, user)
        self._ep.transcript.append(("assistant", AGENT_GREETING))
        first = self._user_turn(AGENT_GREETING)
        intro = (
            "You are a customer-service agent. Follow the policy below; act only through the tools.\n\n"
            f"<policy>\n{self.policy}\n</policy>\n\n"
            f"Tools (OpenAI format): {json.dumps(self.get_tool_schemas(), ensure_ascii=False)}\n"
            'Call tools with <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> (several per message run '
            "in order, and their results come back to you); a message without a tool call is said to the user. "
            f"You opened the conversation with: {AGENT_GREETING!r}"
        )
        if first is None:
            self._ep.done = self._ep.premature = True
            first = ""
        elif self._user_stopped(first):
            self._ep.done = True
        return f"{intro}\n\nUser: {first}", {"task": self.task.label}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require()
        if ep.done:
            return "The conversation is over.", self._final(premature=ep.premature), True, False, {}
        text = action if isinstance(action, str) else str(action)
        said = without_tagged(text, "tool_call").strip()
        if said:
            ep.agent_texts.append(said)
            ep.transcript.append(("assistant", said))
        try:
            calls = parse_tool_action(text).calls
        except ActionFormatError as exc:
            ep.errors += 1
            if ep.errors >= MAX_ERRORS:
                return self._end(premature=True)
            return f"Could not parse your tool call ({exc}).", 0.0, False, False, {}
        if calls:
            parts = []
            for call in calls:
                ep.calls.append(ToolCall(call.name, copy.deepcopy(call.arguments)))
                result, failed = run_tool(ep.tools, call.name, dict(call.arguments), self.declared)
                ep.world.sync()
                ep.errors += failed
                ep.transcript.append(("tool", result))
                parts.append(f"<tool_response>{json.dumps({'name': call.name, 'content': result}, ensure_ascii=False)}"
                             "</tool_response>")
            if ep.errors >= MAX_ERRORS:
                return self._end(premature=True)
            return "\n".join(parts), 0.0, False, False, {}
        if STOP in text:
            return self._end(premature=False)
        reply = self._user_turn(said or text)
        if reply is None:
            return self._end(premature=True)
        if self._user_stopped(reply):
            return self._end(premature=False)
        return f"User: {reply}", 0.0, False, False, {}

    def close(self) -> None:
        self._ep = None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.declared.values())

    def _user_turn(self, agent_text: str) -> str | None:
        """The user's next message to the agent. A dual-control user may first call its tools
        (run on its side of the world, each followed by the sync, the results handed back to
        it and never shown to the agent); their failures count toward :data:`MAX_ERRORS` with
        the agent's, as the benchmark counts them. ``None``: the episode ends prematurely (too
        many errors, or :data:`MAX_USER_TOOL_ROUNDS`)."""
        ep = self._require()
        turn = ep.user.respond(agent_text)
        while turn.tool_calls:
            ep.user_tool_rounds += 1
            results = [(c.id, self._run_user_call(c)) for c in turn.tool_calls]
            if ep.errors >= MAX_ERRORS or ep.user_tool_rounds >= MAX_USER_TOOL_ROUNDS:
                return None
            turn = ep.user.tool_results(results)
        ep.transcript.append(("user", turn.text))
        return turn.text

    def _run_user_call(self, call: UserToolCall) -> str:
        ep = self._require()
        if call.arguments is None:
            ep.errors += 1
            return f"Error: the arguments of {call.name} are not a JSON object: {call.raw_arguments[:200]}"
        ep.calls.append(ToolCall(call.name, copy.deepcopy(call.arguments)))
        tools, declared = ep.world.side("user")
        result, failed = run_tool(tools, call.name, dict(call.arguments), declared)
        ep.world.sync()
        ep.errors += failed
        ep.transcript.append(("tool", result))
        return result

    # -- scoring -----------------------------------------------------------------------

    @staticmethod
    def _user_stopped(text: str) -> bool:
        return any(token in text for token in (STOP, TRANSFER, OUT_OF_SCOPE))

    def _require(self) -> _Episode:
        if self._ep is None:
            raise RuntimeError(f"tau2 task {self.task.label}: step() called before reset()")
        return self._ep

    def _end(self, *, premature: bool) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require()
        ep.done = True
        ep.premature = premature
        reward, breakdown = self.score(premature=premature)
        info: dict[str, Any] = {"reward_breakdown": breakdown}
        if ep.judged is not None and "NL_ASSERTION" in breakdown:
            info["nl_assertions"] = [asdict(v) for v in ep.judged[1]]
        return "The conversation is over.", reward, True, False, info

    def _final(self, *, premature: bool) -> float:
        return self.score(premature=premature)[0]

    def score(self, *, premature: bool = False) -> tuple[float, dict[str, float]]:
        """The task's reward and its components (the benchmark's evaluation type ``all``:
        the product of the ``reward_basis`` components, :mod:`.scoring`)."""
        ep = self._require()
        if premature:
            return 0.0, {}
        if self.task.criteria is None:
            return 1.0, {}
        parts: dict[str, float] = {}
        basis = set(self.task.reward_basis)
        if "DB" in basis:
            parts["DB"] = db_matches(self.task, ep.world, self.base_db, self.base_user_db)
        if "ENV_ASSERTION" in basis:
            parts["ENV_ASSERTION"] = assertions_hold(self.task, ep.world)
        if "ACTION" in basis:
            parts["ACTION"] = actions_matched(self.task, ep.calls)
        if "COMMUNICATE" in basis:
            parts["COMMUNICATE"] = communicated(self.task, ep.agent_texts)
        if "NL_ASSERTION" in basis:
            parts["NL_ASSERTION"] = all_met(self._verdicts()) if self.task.nl_assertions else 1.0
        return math.prod(parts.values()), parts

    def _verdicts(self) -> list[Verdict]:
        """The judge's verdicts on the task's assertions over the conversation so far, asked
        once for it; :class:`~.judge.JudgeReplyError` when its reply cannot be read (the
        harness records it as the episode's error)."""
        ep = self._require()
        if ep.judged is None or ep.judged[0] != len(ep.transcript):
            ep.judged = (len(ep.transcript), self.judge.judge(ep.transcript, self.task.nl_assertions))
        return ep.judged[1]
