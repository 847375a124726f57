r"""The designer's instructions for the games domain, with a complete skeleton game.

The skeleton inside :data:`PROMPT_SPEC` is itself a valid environment; the tests run it
through the same contract checks as the seed pool, so the example the designer imitates
can never drift out of the contract it describes.
"""

from __future__ import annotations

#: Standard-library modules a game may import (the sandbox allow-list for this domain).
ALLOWED_IMPORTS: tuple[str, ...] = (
    "random",
    "math",
    "re",
    "json",
    "itertools",
    "collections",
    "functools",
    "string",
    "dataclasses",
    "typing",
    "heapq",
    "bisect",
)

SKELETON = r'''import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


class VaultDialEnv:
    """A 3-digit vault code; each try tells, per dial, whether to turn higher or lower."""

    GRAMMAR = "Command: \\boxed{try DDD} with three digits 0-9, e.g. \\boxed{try 505}."

    def __init__(self, max_turns=10):
        self.max_turns = max_turns
        self.code = "000"
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.code = "".join(str(rng.randint(0, 9)) for _ in range(3))
        self.turn = 0
        self.done = False
        return "Open the vault: find its 3-digit code. " + self.GRAMMAR, {"turn": 0}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        found = _BOX.findall(action) if isinstance(action, str) else []
        parts = found[-1].split() if found else []
        if len(parts) == 2 and parts[0].lower() == "try" and len(parts[1]) == 3 and parts[1].isdecimal():
            hints = []
            for guess, true in zip(parts[1], self.code):
                hints.append("ok" if guess == true else ("higher" if guess < true else "lower"))
            right = hints.count("ok")
            if right == 3:
                self.done = True
                return "The vault opens!", 1.0, True, False, {"turn": self.turn}
            obs, reward = "Dials: " + ", ".join(hints) + ".", 0.3 * right / 3
        else:
            obs, reward = "Invalid command. " + self.GRAMMAR, 0.0
        truncated = self.turn >= self.max_turns
        self.done = truncated
        return obs, reward, False, truncated, {"turn": self.turn}

    def solution(self):
        return ["\\boxed{try " + self.code + "}"]

    def close(self):
        pass
'''

#: Mechanics that exercise each skill, shown to the designer as inspiration.
SKILL_IDEAS: dict[str, str] = {
    "mathematical_reasoning": "query a hidden function or quantity, then state it exactly "
    "(coefficients, remainders, sums of unknowns).",
    "logical_deduction": "questions whose answers constrain a hidden assignment (truth-tellers and "
    "liars, peg feedback, refuted suggestions, pairwise orderings).",
    "spatial_reasoning": "explore a grid or map seen only locally or through distances; locate, "
    "navigate, or cover hidden objects.",
    "pattern_recognition": "probe examples of a hidden rule or transformation, then apply it to new "
    "cases (sequences, ciphers, classification).",
    "optimization": "learn hidden costs or values at a price in turns, then commit to one best "
    "choice scored against the optimum.",
    "causal_inference": "intervene on variables (toggle, set, block) and observe effects to recover "
    "hidden causes, then act on them.",
}

PROMPT_SPEC = (
    r"""You are designing a text game that trains careful multi-step reasoning. Write ONE Python
file that defines ONE class whose name ends in `Env`. The game must satisfy all of this:

1. Interface (a plain class, no base class):
   - `reset(self, seed=None) -> (observation: str, info: dict)`: build a fresh game from
     `random.Random(seed)` only. The same seed must always give the same game; different
     seeds should give different games. Never use the global `random` functions, time, or
     anything else that varies between runs.
   - `step(self, action: str) -> (observation: str, reward: float, terminated: bool, truncated: bool, info: dict)`.
   - `solution(self) -> list[str]`: a list of actions which, replayed from `reset(seed)` with
     the same seed, reaches reward 1.0 and `terminated=True` in fewer than `max_turns` steps.
     It may read the hidden state; it proves the game can be won. Include only the actions
     needed to win (no exploratory probes).
   - `close(self)`.
2. Genuinely multi-turn with hidden state: the player must act to learn what it needs
   (probe, query, test, explore, measure). A game that can be answered from the first
   observation alone, or won by one lucky action, is not acceptable.
3. Actions are commands wrapped as \boxed{command}; take the last \boxed{...} in the
   action text. The first observation must state the goal and the full command grammar
   with an example. Accept harmless variations (case, extra spaces).
4. Invalid or malformed actions (no box, unknown verb, bad argument, out of range) must never
   raise: answer with an observation explaining what was wrong and how to fix it, give
   reward 0.0 (or the current progress), and do not end the episode because of them.
5. Rewards are floats in [0, 1]. 1.0 means solved and is given only on the step that solves
   the game, together with `terminated=True`. Otherwise reward partial progress (fraction of
   the hidden state uncovered, closeness of an answer...). Doing nothing must earn nothing,
   and a guess at chance level should earn (almost) nothing. The final step's reward is the
   episode's score, so give the final reward on the terminating step.
6. Keep a turn budget `max_turns` (a constructor argument with a default, between 8 and 25);
   when it runs out without success, return `truncated=True`.
7. Standard library only. You may import: """
    + ", ".join(ALLOWED_IMPORTS)
    + r""". No files, network, threads,
   eval/exec, getattr tricks or double-underscore attributes (other than defining `__init__`).
8. Keep observations short and informative; report what the last action revealed.

Build the game around the requested skill. Mechanics that suit each skill (invent your own):
"""
    + "\n".join(f"- {skill}: {ideas}" for skill, ideas in SKILL_IDEAS.items())
    + r"""

A complete, minimal example of the format (make yours richer and different):

```python
"""
    + SKELETON
    + "```\n"
)
