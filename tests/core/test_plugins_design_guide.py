"""A domain can shape its designer (``spade_register_design_guides``): its own example
environments reach the full design prompt and its own scaffold is what the compact prompt
prefills, in a real design round (replay backend, real validation in the sandbox, a real
store); mistakes in a guide are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.domains import ActionFormat, DesignGuide, Domain
from spade_core.errors import PluginError
from spade_core.hookspecs import hookimpl
from spade_core.plugins import SpadePlugins
from spade_core.store import EnvStore
from spade_designer.config import DesignerConfig
from spade_designer.designer import Designer
from spade_designer.llm import ReplayBackend
from spade_designer.prompts import design_conversation
from spade_designer.scaffold import TURN_GAME_SCAFFOLD, scaffold_for
from spade_designer.validation import Validator

LANTERN = (Path(__file__).parents[1] / "designer" / "envs" / "lantern.py").read_text(encoding="utf-8")

#: The domain's own scaffold: riddle plumbing (a turn budget, answers as \boxed{...}).
RIDDLE_BASE = r'''import random
import re


class RiddleGame:
    """Riddles answered as \\boxed{answer}; a game defines start, answer and solution."""

    max_turns = 6

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.turn, self.done = 0, False
        return self.start(), {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", action) if isinstance(action, str) else []
        obs, solved = self.answer(found[-1].strip().lower() if found else "")
        truncated = not solved and self.turn >= self.max_turns
        self.done = solved or truncated
        return obs, 1.0 if solved else 0.0, solved, truncated, {}

    def close(self):
        pass


class '''
RIDDLE_TASK = "Write ONE class `NameEnv(RiddleGame)` with start(), answer(text) and solution()."
#: What the replayed model writes after the scaffold.
RIDDLE_CONTINUATION = r'''EchoRiddleEnv(RiddleGame):
    """Say the hidden word back: each wrong answer reveals one more letter."""

    def start(self):
        self.word = self.rng.choice(["lantern", "harbor", "meadow", "violet"])
        self.shown = 1
        return "Guess my word; it starts with %r. Answer \\boxed{word}." % self.word[0]

    def answer(self, text):
        if text == self.word:
            return "Right!", True
        self.shown = min(len(self.word) - 1, self.shown + 1)
        return "No. It starts with %r." % self.word[: self.shown], False

    def solution(self):
        return ["\\boxed{%s}" % self.word]
```
'''


class RiddlePlugin:
    @hookimpl
    def spade_register_domains(self, register):  # type: ignore[no-untyped-def]
        register(Domain(name="riddles", description="Riddles with hidden words.", skills=("wordplay",),
                        prompt_spec="Write riddle games.", action_format=ActionFormat.boxed))

    @hookimpl
    def spade_register_design_guides(self, register):  # type: ignore[no-untyped-def]
        register(DesignGuide("riddles", examples=(LANTERN,), scaffold=RIDDLE_BASE, scaffold_task=RIDDLE_TASK))


def riddle_plugins() -> SpadePlugins:
    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(RiddlePlugin(), name="riddles")
    return plugins


def test_the_guide_reaches_the_full_prompt_and_the_scaffold() -> None:
    plugins = riddle_plugins()
    domain, guide = plugins.domain("riddles"), plugins.design_guides()["riddles"]
    prompt = design_conversation(domain, "wordplay", examples=guide.examples)[1]["content"]
    assert "## Example environments of the riddles domain\n### Example 1\n```python\nimport random" in prompt
    assert "class LanternCodeEnv" in prompt
    scaffold = scaffold_for(domain, guide)
    assert scaffold is not None and scaffold.prefill == "```python\n" + RIDDLE_BASE and scaffold.task == RIDDLE_TASK
    assert scaffold_for(domain) is TURN_GAME_SCAFFOLD  # without a guide: the action format's


@pytest.mark.parametrize("style", ["full", "compact"])
def test_a_design_round_uses_the_domain_s_examples_and_scaffold(style: str, tmp_path: Path) -> None:
    plugins = riddle_plugins()
    if style == "full":  # the reply comes only when the prompt holds the domain's example
        rules = [("source code of an environment", "Ask for one letter at a time."),
                 ("Example environments of the riddles domain", "```python\n" + LANTERN + "```\n")]
    else:  # the replay continues the prefilled scaffold
        rules = [("source code of an environment", "Ask for one letter at a time."),
                 (r"NameEnv\(RiddleGame\)", RIDDLE_CONTINUATION)]
    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store, Validator() as validator:
        designer = Designer(ReplayBackend(rules=rules), store, validator,
                            config=DesignerConfig(prompt_style=style, repair_attempts=0), plugins=plugins)
        result = designer.design_round("riddles", "wordplay", 1, seed=3)
        (candidate,) = result.candidates
        assert candidate.admitted, candidate.reasons
        source = store.get_source(candidate.metadata.id)
    if style == "full":
        assert source == LANTERN
    else:
        assert candidate.conversation[-1] == {"role": "assistant", "content": "```python\n" + RIDDLE_BASE}
        assert source.startswith(RIDDLE_BASE + "EchoRiddleEnv(RiddleGame):")


def test_guide_mistakes_are_named() -> None:
    class Twice:
        @hookimpl
        def spade_register_design_guides(self, register):  # type: ignore[no-untyped-def]
            register(DesignGuide("riddles", examples=("x",)))

    plugins = riddle_plugins()
    plugins.register(Twice(), name="twice")
    with pytest.raises(PluginError, match=r"domain 'riddles' given two design guides \(by 'riddles' and 'twice'\)"):
        plugins.design_guides()

    class NoTask:
        @hookimpl
        def spade_register_design_guides(self, register):  # type: ignore[no-untyped-def]
            register(DesignGuide("other", scaffold="class "))

    plugins = SpadePlugins(load_entry_points=False)
    plugins.register(NoTask(), name="notask")
    with pytest.raises(PluginError, match="plugin 'notask': the design guide of domain 'other' has a scaffold "
                                          "without its scaffold_task"):
        plugins.design_guides()
