"""The designer role's prompts: design, repair and hint conversations.

A design prompt is: the domain's spec (format, rules, an example) + the domain's own
example environments (its design guide, ``spade_register_design_guides``) + the grounding
document + memory examples (different / too easy / too hard / failed) + the target skill,
difficulty and the agent's recent performance. The reply is expected to hold one fenced
Python block; :mod:`.extract` is tolerant of everything else.

The *compact* design prompt is for small reply budgets: instead of the domain's full spec
and example it states the task of completing a :mod:`.scaffold`, shows memory examples
as one line each, and ends with an assistant message prefilled with the scaffold's code,
which the backend continues (about a quarter of the full prompt's tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

from spade_core.domains import Domain

from .corpus.base import Document
from .llm.base import Conversation
from .memory import MemoryExample, MemorySelection
from .records import AgentStats
from .scaffold import Scaffold

COMPACT_SYSTEM = (
    "You are the Environment Designer. You complete Python files that define small text games "
    "for training a reasoning agent. Write only code."
)

DESIGNER_SYSTEM = (
    "You are the Environment Designer. You write complete, self-contained Python "
    "environments (one file, one class whose name ends in `Env`) that train a reasoning "
    "agent over several turns. Reply with exactly one ```python fenced block holding the "
    "whole file, then nothing else."
)

HINT_SYSTEM = (
    "You write privileged hints for training environments. A hint is 1-3 sentences that "
    "help a player find the right strategy. It never states the answer, a hidden value, or "
    "the exact sequence of actions."
)

_ROLE_TITLES = {
    "different": "A good environment (the agent is challenged by it). Make something DIFFERENT from it",
    "too_easy": "Too easy (the agent almost always wins). Avoid designs like this",
    "too_hard": "Too hard (the agent almost never wins). Avoid designs like this",
    "failure": "Rejected by validation. Do not repeat these mistakes",
}


def difficulty_words(difficulty: float | None) -> str:
    if difficulty is None:
        return "moderate, solvable but not trivial"
    level = "easy" if difficulty < 1 / 3 else "medium" if difficulty < 2 / 3 else "hard"
    return f"{level} ({difficulty:.2f} on a 0-1 scale)"


def _example_block(i: int, ex: MemoryExample) -> str:
    facts = [f"skill {ex.skill}"]
    if ex.win_rate is not None:
        facts.append(f"agent win rate {ex.win_rate:.2f}")
    if ex.regret is not None:
        facts.append(f"regret {ex.regret:.2f}")
    lines = [f"### Example {i}: {_ROLE_TITLES[ex.role]} ({', '.join(facts)})"]
    if ex.reasons:
        lines.append("Rejected because: " + "; ".join(ex.reasons))
    if ex.code:
        lines.append("```python\n" + ex.code.rstrip() + "\n```")
    return "\n".join(lines)


def design_conversation(
    domain: Domain,
    skill: str,
    *,
    document: Document | None = None,
    memory: MemorySelection | None = None,
    difficulty: float | None = None,
    agent: AgentStats | None = None,
    system: str | None = None,
    examples: Sequence[str] = (),
) -> Conversation:
    """The conversation asking for one new environment; ``examples`` are the domain's own
    example environments (its :class:`~spade_core.domains.DesignGuide`'s)."""
    parts = [domain.prompt_spec.strip()]
    if examples:
        blocks = [f"### Example {i}\n```python\n{code.strip()}\n```" for i, code in enumerate(examples, 1)]
        parts.append(f"## Example environments of the {domain.name} domain\n" + "\n\n".join(blocks))
    if document is not None and document.text.strip():
        title = f" ({document.title})" if document.title else ""
        parts.append(
            f"## Grounding document{title}\nBase the environment's theme, rules or content on this text:\n\n"
            + document.text.strip()
        )
    if memory is not None and memory.examples:
        blocks = [_example_block(i, ex) for i, ex in enumerate(memory.examples, 1)]
        parts.append("## Environments designed before\n" + "\n\n".join(blocks))
    target = [f"## Your task\nDesign a new environment for the skill `{skill}`.",
              f"Target difficulty: {difficulty_words(difficulty)}."]
    if agent is not None and agent.win_rate is not None:
        target.append(_agent_line(skill, agent))
    target.append("Reply with the complete Python file in one ```python block.")
    parts.append("\n".join(target))
    return [
        {"role": "system", "content": system or DESIGNER_SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _agent_line(skill: str, agent: AgentStats) -> str:
    rate = agent.win_rate or 0.0
    return (
        f"The agent currently wins {rate:.0%} of recent `{skill}` environments"
        + (f" over {agent.episodes} episodes" if agent.episodes else "")
        + ("; make this one harder." if rate > 0.6 else "; make this one easier to start with." if rate < 0.2 else ".")
    )


def _example_line(ex: MemoryExample) -> str:
    facts = [f"skill {ex.skill}"]
    if ex.win_rate is not None:
        facts.append(f"win rate {ex.win_rate:.2f}")
    why = f"; rejected: {ex.reasons[0]}" if ex.reasons else ""
    role = {"different": "make something different from", "too_easy": "too easy, avoid",
            "too_hard": "too hard, avoid", "failure": "failed, avoid"}[ex.role]
    about = f": {' '.join(ex.description.split())[:120]}" if ex.description else ""
    return f"- {role} `{ex.env_id}`{about} ({', '.join(facts)}{why})"


def compact_design_conversation(
    domain: Domain,
    skill: str,
    scaffold: Scaffold,
    *,
    document: Document | None = None,
    memory: MemorySelection | None = None,
    difficulty: float | None = None,
    agent: AgentStats | None = None,
    system: str | None = None,
) -> Conversation:
    """The conversation asking a small budget for one environment: a brief task and the
    scaffold as a prefilled assistant reply (the last message) to continue."""
    parts = [f"Game domain: {domain.description.strip()}",
             f"Skill to train: `{skill}`. Difficulty: {difficulty_words(difficulty)}."]
    if agent is not None and agent.win_rate is not None:
        parts.append(_agent_line(skill, agent))
    if document is not None and document.text.strip():
        parts.append("Take the game's theme from this text:\n" + " ".join(document.text.split()))
    if memory is not None and memory.examples:
        parts.append("Earlier games:\n" + "\n".join(_example_line(ex) for ex in memory.examples))
    parts.append(scaffold.task)
    return [
        {"role": "system", "content": system or COMPACT_SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
        {"role": "assistant", "content": scaffold.prefill},
    ]


def repair_conversation(
    design: Conversation, reply: str, findings: list[str], *, scaffold: Scaffold | None = None
) -> Conversation:
    """The design conversation continued: the previous (whole) reply, then what validation
    found. With a ``scaffold`` the design ends with its prefill, which is replaced by the
    whole reply, and the new answer is prefilled with the scaffold again."""
    problems = "\n".join(f"- {line}" for line in findings) or "- (no details)"
    if scaffold is not None and design and design[-1]["role"] == "assistant":
        design = design[:-1]
    ask = (
        "Fix every problem and reply with the complete corrected Python file in one ```python block."
        if scaffold is None
        else "Fix every problem: complete the file again from the start below."
    )
    conversation = [
        *design,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": f"Validation rejected this environment:\n{problems}\n\n{ask}"},
    ]
    if scaffold is not None:
        conversation.append({"role": "assistant", "content": scaffold.prefill})
    return conversation


def hint_conversation(source: str, *, skill: str | None = None, max_source_chars: int = 8000) -> Conversation:
    """Ask for a 1-3 sentence privileged hint about ``source``."""
    code = source if len(source) <= max_source_chars else source[:max_source_chars] + "\n# ... (truncated)"
    about = f" (skill: {skill})" if skill else ""
    return [
        {"role": "system", "content": HINT_SYSTEM},
        {
            "role": "user",
            "content": (
                f"Here is the source code of an environment{about}:\n\n```python\n{code.rstrip()}\n```\n\n"
                "Write a hint of 1 to 3 sentences for a player who cannot see this code. Explain a useful "
                "strategy or a rule that is easy to miss. Do not reveal the answer, any hidden value, or the "
                "exact actions to take. Reply with the hint only."
            ),
        },
    ]
