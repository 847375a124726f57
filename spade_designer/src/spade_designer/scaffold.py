r"""Code scaffolds: the start of an environment file that a design reply continues.

A complete environment in the format the domain prompts show is about 550 tokens; a
small model given a reply budget of a few hundred tokens spends it on boilerplate (turn
counting, parsing ``\boxed{...}`` commands, truncation) and is cut off before the class
is complete. With a scaffold the designer *prefills* the reply: a short base class
``TurnGame`` that holds the contract's plumbing, then ``class `` — and the model writes
only what makes a game a game: the class name, the hidden state (``start``), the rules
(``play``) and the proof that it can be won (``solution``).

The scaffold is ordinary code shipped inside the environment's source: validation,
hints and the store see the whole file, and nothing outside the file is needed to run
it. A scaffold exists per action format, and a domain may bring its own through the
``spade_register_design_guides`` hook (``DesignGuide.scaffold``), which wins; formats
without one and domains without their own (tool calls) are designed from the full prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from spade_core.domains import ActionFormat, DesignGuide, Domain

#: The base class of scaffolded games (``boxed`` action format). ``step`` turns the
#: last ``\boxed{...}`` of an action into a lower-case command for ``play``.
TURN_GAME = r'''import random
import re


class TurnGame:
    """Turn budget, boxed commands and episode end; a game defines start, play, solution."""

    max_turns = 12

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.turn = 0
        self.done = False
        return self.start(), {"turn": 0}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", action) if isinstance(action, str) else []
        command = " ".join(found[-1].lower().split()) if found else ""
        obs, reward, solved = self.play(command)
        if solved:
            self.done = True
            return obs, 1.0, True, False, {"turn": self.turn}
        truncated = self.turn >= self.max_turns
        self.done = truncated
        return obs, reward, False, truncated, {"turn": self.turn}

    def close(self):
        pass


class '''

#: What the model must write after the scaffold, in the words of the compact prompt.
TURN_GAME_TASK = r"""Complete the Python file that starts below. Write ONE class `NameEnv(TurnGame)` (pick a name) with:
- a one-line docstring saying what the game is;
- `start(self)`: make the hidden state with `self.rng` only (e.g. `self.rng.randint(1, 9)`), then return the first observation: the goal and the command grammar with an example such as \boxed{ask 3};
- `play(self, command)`: `command` is the lower-case text of the player's last \boxed{...} ("" if none). Return `(observation, reward, solved)`: reward between 0.0 and 0.9 for progress (0.0 for bad commands, never raise), `solved=True` only when the game is won;
- `solution(self)`: the list of actions, each written like "\\boxed{ask 3}", that wins the game from the start.
The player must need several turns to uncover the hidden state. Standard library only. Finish the class and close the code block with ```."""


@dataclass(frozen=True)
class Scaffold:
    """A prefilled reply start: ``prefill`` (fence plus code) and the instructions that
    ask the model to complete it."""

    name: str
    prefill: str
    task: str

    def reply(self, generated: str) -> str:
        """The whole reply a model gave: the prefill followed by what it generated."""
        return self.prefill + generated


TURN_GAME_SCAFFOLD = Scaffold("turn-game", "```python\n" + TURN_GAME, TURN_GAME_TASK)

_BY_FORMAT: dict[ActionFormat, Scaffold] = {ActionFormat.boxed: TURN_GAME_SCAFFOLD}


def scaffold_for(domain: Domain, guide: DesignGuide | None = None) -> Scaffold | None:
    """The scaffold of ``domain``: its design guide's own when it has one, else the one of
    its action format, else ``None``."""
    if guide is not None and guide.scaffold is not None:
        return Scaffold(f"{domain.name}-guide", "```python\n" + guide.scaffold, guide.scaffold_task or "")
    return _BY_FORMAT.get(domain.action_format)
