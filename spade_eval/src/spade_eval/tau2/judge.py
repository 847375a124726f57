"""The ``NL_ASSERTION`` reward component: an LLM judge, as tau2-bench scores it.

The judge model is given the conversation (every message as ``role: text``: the agent as
``assistant``, the customer as ``user``, a tool's result as ``tool``) and the task's
``nl_assertions``, and says of each whether the agent met it; the component is 1 when every
assertion is met, else 0 (the benchmark's ``NLAssertionsEvaluator``). A task whose basis
names ``NL_ASSERTION`` but lists no assertions scores 1 with no judge asked, as there.

The judge is a model behind an OpenAI-compatible endpoint (``-o judge=openai:BASE_URL#MODEL``,
by default the simulated user's), asked through the ``openai`` backend's
:meth:`~spade_designer.llm.openai_backend.OpenAIBackend.chat_completion` (its retries,
deadline and size limit), at temperature 0. It answers one JSON object,
``{"results": [{"expectedOutcome": ..., "reasoning": ..., "metExpectation": true|false}, ...]}``
(the benchmark's fields), optionally inside one Markdown code fence.

**An unreadable reply** is not scored: :func:`read_verdicts` raises :class:`JudgeReplyError`
naming what is wrong (not JSON, no ``results`` list, an entry without its outcome's text or
a boolean verdict, an assertion left without a verdict or answered twice, a verdict on an
outcome that was not asked) and quoting the start of the reply. Where the benchmark takes
whatever entries the reply lists (none at all counting as all met), every assertion must be
answered here, exactly once, by its text (compared with runs of whitespace collapsed and
case ignored).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..dialogue import resolve_endpoint
from ..suites import SuiteError

#: Tokens the judge may write (a verdict and a short reason per assertion).
JUDGE_MAX_TOKENS = 1024

JUDGE_INSTRUCTIONS = """You grade a recorded customer-service conversation against a list of expected outcomes.
In the conversation, "assistant" is the agent, "user" is the customer and "tool" lines are the results of the
tools they called. Decide from the conversation alone whether the agent met each expected outcome, one at a time.

Reply with one JSON object and nothing else:
{"results": [{"expectedOutcome": "<the expected outcome, copied exactly>", "reasoning": "<one short sentence>",
"metExpectation": <true or false>}]}
with one entry per expected outcome, in the order they are given."""


class JudgeReplyError(ValueError):
    """The NL-assertion judge's reply cannot be read (what is wrong and the reply's start
    in the message); the episode is not scored."""


class JudgeUnavailable(SuiteError):
    """A task's NL assertions need a judge this configuration cannot reach."""


@dataclass(frozen=True)
class Verdict:
    """The judge's word on one assertion."""

    assertion: str
    met: bool
    reasoning: str = ""


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _excerpt(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def unfenced(text: str) -> str:
    """``text`` (stripped) without a Markdown fence around it (```` ```json ... ``` ````):
    its inside, less the language word, stripped; slicing, not a regular expression, whose
    lazy body before ``\\s*```$`` took time quadratic in a reply's whitespace."""
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        return text[3:-3].lstrip(_LETTERS).strip()
    return text


def read_verdicts(reply: str, assertions: Sequence[str]) -> list[Verdict]:
    """The judge's verdicts on ``assertions``, in their order, read from its reply text;
    :class:`JudgeReplyError` when the reply cannot be read (see the module docstring)."""

    def unreadable(problem: str) -> JudgeReplyError:
        return JudgeReplyError(f"the NL-assertion judge's reply cannot be read: {problem} (reply: {_excerpt(reply)})")

    text = unfenced(reply.strip())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise unreadable(f"not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise unreadable('not an object with a "results" list')
    entries: list[tuple[str, bool, str]] = []
    for k, entry in enumerate(data["results"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("expectedOutcome"), str):
            raise unreadable(f'results[{k}] has no "expectedOutcome" text')
        if not isinstance(entry.get("metExpectation"), bool):
            raise unreadable(f'results[{k}] has no boolean "metExpectation" (got {entry.get("metExpectation")!r})')
        reasoning = entry.get("reasoning")
        entries.append((entry["expectedOutcome"], entry["metExpectation"], reasoning if isinstance(reasoning, str)
                        else ""))
    verdicts: list[Verdict] = []
    unused = list(range(len(entries)))
    for assertion in assertions:
        k = next((k for k in unused if _key(entries[k][0]) == _key(assertion)), None)
        if k is None:
            answered_before = any(v.assertion == assertion for v in verdicts)
            raise unreadable(f"no {'second ' if answered_before else ''}verdict on the assertion {assertion!r}")
        unused.remove(k)
        verdicts.append(Verdict(assertion, entries[k][1], entries[k][2]))
    if unused:
        raise unreadable(f"a verdict on an outcome that was not asked: {entries[unused[0]][0]!r}")
    return verdicts


def all_met(verdicts: Sequence[Verdict]) -> float:
    """The component's value: 1 when every assertion is met, else 0."""
    return float(all(v.met for v in verdicts))


def render_conversation(transcript: Sequence[tuple[str, str]]) -> str:
    """The conversation as the judge reads it: one ``role: text`` entry per message."""
    return "\n".join(f"{role}: {text}" for role, text in transcript)


class NLJudge:
    """The judge model behind an OpenAI-compatible endpoint (an object with the ``openai``
    backend's ``chat_completion`` and ``model_name``)."""

    def __init__(self, backend: Any, *, max_new_tokens: int = JUDGE_MAX_TOKENS) -> None:
        self.backend = backend
        self.max_new_tokens = max_new_tokens

    @property
    def reachable(self) -> bool:
        """Whether the backend can be asked (the ``openai`` backend's request path)."""
        return callable(getattr(self.backend, "chat_completion", None))

    def require_reachable(self, where: str) -> None:
        """Raise :class:`JudgeUnavailable` (its message starting with ``where``) unless the
        backend can be asked."""
        if not self.reachable:
            raise JudgeUnavailable(f"{where}: NL assertions are scored by a judge model behind an OpenAI-compatible "
                                   "endpoint: give it with -o judge=openai:BASE_URL#MODEL (by default the simulated "
                                   f"user's, -o user=openai:...); got a {type(self.backend).__name__}")

    @staticmethod
    def messages(transcript: Sequence[tuple[str, str]], assertions: Sequence[str]) -> list[dict[str, str]]:
        """The request's messages: the instructions, then the conversation and the numbered
        assertions."""
        listed = "\n".join(f"{k}. {a}" for k, a in enumerate(assertions, start=1))
        return [{"role": "system", "content": JUDGE_INSTRUCTIONS},
                {"role": "user", "content": f"Conversation:\n{render_conversation(transcript)}\n\n"
                                            f"Expected outcomes:\n{listed}"}]

    def judge(self, transcript: Sequence[tuple[str, str]], assertions: Sequence[str]) -> list[Verdict]:
        """Ask the judge about ``assertions`` on ``transcript``; its verdicts in their order.
        Raises :class:`JudgeReplyError` for a reply that cannot be read, and the backend's
        own error when the endpoint does not answer."""
        self.require_reachable("tau2 NL-assertion judge")
        data = self.backend.chat_completion({
            "model": getattr(self.backend, "model_name", "default"), "messages": self.messages(transcript, assertions),
            "max_tokens": self.max_new_tokens, "temperature": 0.0, "n": 1})
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeReplyError(f"the NL-assertion judge's answer has no choices[0].message.content: "
                                  f"{_excerpt(json.dumps(data, default=str))}") from None
        if not isinstance(content, str):
            raise JudgeReplyError(f"the NL-assertion judge's reply has no text (content {content!r})")
        return read_verdicts(content, assertions)


def resolve_judge(judge: Any, user_backend: Any, plugins: Any) -> NLJudge:
    """The judge of ``-o judge=``: the simulated user's backend when not given, else as
    :func:`~spade_eval.dialogue.resolve_endpoint` reads it (an object with
    ``chat_completion``, or ``openai:BASE_URL#MODEL``); what it cannot use is
    :class:`JudgeUnavailable`."""
    if judge is None:
        return NLJudge(user_backend)
    return NLJudge(resolve_endpoint(judge, plugins, suite="tau2_bench", option="judge",
                                    role="the NL-assertion judge", needs="chat_completion", error=JudgeUnavailable))
