"""Compact design prompts: a brief task plus a code scaffold the reply continues.

For small reply budgets (the embedded 135M model on CPU) the designer prefills the reply
with the start of the file, so the tokens the model generates go into the game itself.
Everything but the model is real here: the games domain, the validation pipeline in the
sandbox, the SQLite store.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.errors import SpadeError
from spade_core.metadata import EnvStatus
from spade_core.plugins import get_plugins
from spade_designer.config import DesignerConfig
from spade_designer.corpus import PyDocsCorpus
from spade_designer.corpus.base import Document
from spade_designer.designer import CLOSING_FENCE, Designer
from spade_designer.extract import extract_env
from spade_designer.llm import Completion, ReplayBackend
from spade_designer.llm.base import ChatBackend
from spade_designer.memory import StoreMemory
from spade_designer.prompts import compact_design_conversation, design_conversation, repair_conversation
from spade_designer.scaffold import TURN_GAME, TURN_GAME_SCAFFOLD, scaffold_for

SKILL = "logical_deduction"
HINT = "Each answer rules out half of what is left."

#: What a model writes after the scaffold: a class, the closing fence, then chatter.
SWITCH = '''SwitchEnv(TurnGame):
    """Find which of seven switches lights the lamp; each test says higher or lower."""

    def start(self):
        self.target = self.rng.randint(1, 7)
        return "One of switches 1-7 lights the lamp. Test one with \\\\boxed{flip N}, e.g. \\\\boxed{flip 4}."

    def play(self, command):
        parts = command.split()
        if len(parts) != 2 or parts[0] != "flip" or not parts[1].isdecimal():
            return "Use \\\\boxed{flip N} with N from 1 to 7.", 0.0, False
        n = int(parts[1])
        if n == self.target:
            return "The lamp lights up!", 1.0, True
        return ("Higher." if n < self.target else "Lower."), 0.0, False

    def solution(self):
        return ["\\\\boxed{flip " + str(self.target) + "}"]
```
I hope you like this game!
'''

#: Cut off inside a string in ``play``, as a 256-token budget would.
CUT = SWITCH[: SWITCH.index('"Higher.') + 4]


class FreshOnly(ReplayBackend):
    """A backend that cannot continue a prefilled reply (like the OpenAI chat API)."""

    continues_final_message = False


@pytest.fixture(scope="module")
def games():
    return get_plugins().domain("games")


def designer(store, validator, backend, **config):
    config.setdefault("document_words", 60)
    config.setdefault("sampling", {"max_new_tokens": 256})
    return Designer(backend, store, validator, PyDocsCorpus(chunk_words=200), StoreMemory(store), DesignerConfig(**config))


# --- the scaffold ---------------------------------------------------------------------


def test_the_scaffold_is_the_start_of_a_python_file_that_ends_at_a_class_statement():
    assert TURN_GAME.endswith("\n\nclass ")
    tree = ast.parse(TURN_GAME.removesuffix("class "))
    assert [n.name for n in tree.body if isinstance(n, ast.ClassDef)] == ["TurnGame"]
    assert TURN_GAME_SCAFFOLD.prefill.startswith("```python\n")


def test_boxed_domains_get_the_turn_game_scaffold_and_tool_domains_none(games):
    assert scaffold_for(games) is TURN_GAME_SCAFFOLD
    assert scaffold_for(get_plugins().domain("tooluse")) is None


def test_a_completed_scaffold_passes_the_whole_validation_pipeline(validator):
    ext = extract_env(TURN_GAME_SCAFFOLD.reply(SWITCH))
    assert ext.class_name == "SwitchEnv" and ext.max_turns == 12  # the turn budget of the base class
    assert ext.description.startswith("Find which of seven switches")
    report = validator.validate(ext.source)
    assert report.passed, report.reasons


# --- the compact prompt ---------------------------------------------------------------


documents = st.builds(Document, doc_id=st.just("d"), text=st.text(st.characters(codec="utf-8"), max_size=400),
                      title=st.none() | st.text(max_size=20), corpus=st.just("t"))


@given(documents, st.none() | st.floats(0, 1))
def test_for_all_documents_the_compact_prompt_ends_with_the_prefill_and_is_far_shorter(document, difficulty):
    games = get_plugins().domain("games")
    compact = compact_design_conversation(games, SKILL, TURN_GAME_SCAFFOLD, document=document, difficulty=difficulty)
    full = design_conversation(games, SKILL, document=document, difficulty=difficulty)
    assert [m["role"] for m in compact] == ["system", "user", "assistant"]
    assert compact[-1]["content"] == TURN_GAME_SCAFFOLD.prefill
    assert games.prompt_spec.strip() not in compact[1]["content"]
    # the prompt the model reads (prefill included) is well under half the full one
    assert sum(len(m["content"]) for m in compact) < 0.5 * sum(len(m["content"]) for m in full)


def test_auto_style_is_compact_only_for_small_budgets_on_backends_that_continue(store, validator, games):
    small = designer(store, validator, ReplayBackend())
    assert small.scaffold_for_round(games) is TURN_GAME_SCAFFOLD
    big = designer(store, validator, ReplayBackend(), sampling={"max_new_tokens": 2048})
    assert big.scaffold_for_round(games) is None
    assert designer(store, validator, FreshOnly()).scaffold_for_round(games) is None
    assert designer(store, validator, ReplayBackend()).scaffold_for_round(get_plugins().domain("tooluse")) is None
    assert designer(store, validator, ReplayBackend(), prompt_style="full").scaffold_for_round(games) is None


def test_an_explicit_compact_style_that_cannot_be_honoured_fails_before_generation(store, validator):
    backend = FreshOnly()
    with pytest.raises(SpadeError, match="'replay' backend\\s+cannot continue"):
        designer(store, validator, backend, prompt_style="compact").design_round("games", SKILL, 1)
    tooluse = get_plugins().domain("tooluse")
    with pytest.raises(SpadeError, match="code scaffold for the 'tool_call' action format of domain 'tooluse'; there is none"):
        designer(store, validator, ReplayBackend(), prompt_style="compact").design_round(tooluse, tooluse.skills[0], 1)
    assert backend.calls == [] and store.count() == 0


def test_non_continuing_backends_are_not_chat_backends_by_accident():
    assert issubclass(FreshOnly, ChatBackend) and not FreshOnly.continues_final_message


# --- rounds ---------------------------------------------------------------------------


def test_a_compact_round_prefills_stops_at_the_fence_and_admits_the_whole_file(store, validator):
    seen: list[dict] = []

    class Watching(ReplayBackend):
        def chat(self, conversations, **kw):
            seen.append(kw)
            return super().chat(conversations, **kw)

    backend = Watching(rules=[("source code of an environment", HINT), ("Complete the Python file", SWITCH)])
    result = designer(store, validator, backend, repair_attempts=0).design_round("games", SKILL, 1, seed=3)
    (cand,) = result.candidates
    assert seen[0]["stop"] == [CLOSING_FENCE] and seen[0]["max_new_tokens"] == 256
    assert cand.conversation[-1] == {"role": "assistant", "content": TURN_GAME_SCAFFOLD.prefill}
    assert cand.completion.text == SWITCH[: SWITCH.index(CLOSING_FENCE)]  # the chatter after the fence is cut
    assert cand.admitted, cand.reasons
    stored = store.get(cand.metadata.id)
    source = store.get_source(stored.id)
    assert source.startswith(TURN_GAME) and "class SwitchEnv(TurnGame):" in source
    assert stored.status == EnvStatus.admitted and stored.max_turns == 12 and stored.class_name == "SwitchEnv"


def test_a_cut_off_compact_reply_is_rejected_at_extract_and_repaired_from_the_scaffold(store, validator):
    class Truncating(ReplayBackend):
        def chat(self, conversations, **kw):
            out = super().chat(conversations, **kw)
            return [Completion(c.text, c.prompt_tokens, 256, "length" if c.text == CUT else "stop") for c in out]

    backend = Truncating(rules=[("source code of an environment", HINT), ("Validation rejected", SWITCH),
                                ("Complete the Python file", CUT)])
    result = designer(store, validator, backend, repair_attempts=1).design_round("games", SKILL, 1)
    (cand,) = result.candidates
    first, repair = cand.attempts
    assert first.failed_stage == "extract" and "cut off at the 256-token limit" in first.extraction_error
    # the repair shows the whole previous reply (prefill + generated) and prefills again
    assert repair.conversation[-3] == {"role": "assistant", "content": TURN_GAME_SCAFFOLD.prefill + CUT}
    assert "cut off" in repair.conversation[-2]["content"]
    assert repair.conversation[-1] == {"role": "assistant", "content": TURN_GAME_SCAFFOLD.prefill}
    assert cand.admitted and cand.repairs == 1


def test_repair_conversation_without_a_scaffold_is_unchanged():
    design = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    conv = repair_conversation(design, "reply", ["[contract] bad"])
    assert [m["role"] for m in conv] == ["system", "user", "assistant", "user"]
    assert conv[2]["content"] == "reply" and "complete corrected Python file" in conv[3]["content"]
