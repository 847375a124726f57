"""Design rounds end to end with the replay backend and every other part real: the games
domain plugin, the validation pipeline in the sandbox, the SQLite store, store memory and
the embedded Python-docs corpus."""

from __future__ import annotations

import random

import pytest
from spade_core.errors import SpadeError
from spade_core.metadata import EnvStatus
from spade_designer.config import DesignerConfig
from spade_designer.corpus import PyDocsCorpus
from spade_designer.designer import Designer
from spade_designer.errors import UnknownSkillError
from spade_designer.llm import ReplayBackend
from spade_designer.memory import StoreMemory
from spade_designer.records import AgentStats

from .conftest import LANTERN, add_env

SKILL = "logical_deduction"
HINT = "Halve the remaining range with every guess."


def fenced(source: str) -> str:
    return f"Here is the environment.\n```python\n{source}```\n"


#: Fails the contract: step() returns a 3-tuple.
BROKEN = LANTERN.replace('return "The episode is over.", 0.0, True, False, {}', 'return "over", 0.0, True').replace(
    'return obs, 0.0, False, truncated, {"turn": self.turn}', 'return obs, 0.0, truncated'
)


def variant(name: str, low: int, high: int) -> str:
    return LANTERN.replace("LanternCodeEnv", name).replace("10, 99", f"{low}, {high}").replace(
        "from 10 to 99", f"from {low} to {high}"
    )


def make_designer(store, validator, backend, **config):
    config.setdefault("document_words", 60)
    return Designer(backend, store, validator, PyDocsCorpus(chunk_words=200), StoreMemory(store),
                    DesignerConfig(**config))


def test_full_round_admits_valid_rejects_the_rest_and_keeps_reasons(store, validator):
    backend = ReplayBackend(
        rules=[("source code of an environment", HINT),
               ("Design a new environment", [fenced(LANTERN), "Sorry, I can only chat.", fenced(BROKEN)])]
    )
    result = make_designer(store, validator, backend, repair_attempts=0).design_round(SKILL and "games", SKILL, 3, seed=7)
    s = result.summary()
    assert (s["designed"], s["extracted"], s["valid"], s["admitted"], s["rejected"]) == (3, 2, 1, 1, 2)
    assert s["rejected_by_stage"] == {"contract": 1, "extract": 1}

    good, chatty, broken = result.candidates
    assert good.admitted and good.hint.hint == HINT
    stored = store.get(good.metadata.id)
    assert stored.status == EnvStatus.admitted and stored.hint == HINT
    assert stored.validation.passed and stored.designer_model == "replay"
    assert stored.document is not None and stored.document.corpus == "pydocs"
    assert stored.class_name == "LanternCodeEnv" and stored.max_turns == 12 and stored.skill == SKILL
    assert store.get_source(stored.id) == LANTERN

    assert chatty.rejected_stage == "extract" and "no usable environment class" in chatty.reasons[0]
    assert chatty.attempts[0].stored_id is None  # nothing to store without code

    assert broken.rejected_stage == "contract" and broken.reasons
    kept = store.get(broken.attempts[0].stored_id)
    assert kept.status == EnvStatus.retired and kept.validation.failed_stage == "contract"
    assert [s.stage for s in broken.stages][:2] == ["extract", "static"]

    # the designer role's turn is available for training
    assert good.conversation[0]["role"] == "system" and good.completion.text == fenced(LANTERN)
    assert result.timings.keys() >= {"prompt", "generation", "extraction", "validation", "hint", "admission"}


def test_repair_loop_feeds_findings_back_and_records_lineage(store, validator):
    backend = ReplayBackend(
        rules=[("source code of an environment", HINT),
               ("Validation rejected this environment", fenced(LANTERN)),
               ("Design a new environment", fenced(BROKEN))]
    )
    result = make_designer(store, validator, backend, repair_attempts=2).design_round("games", SKILL, 1, seed=1)
    (cand,) = result.candidates
    assert cand.admitted and cand.repairs == 1
    first, repair = cand.attempts
    assert first.failed_stage == "contract" and repair.passed
    repair_prompt = repair.conversation[-1]["content"]
    assert "[contract]" in repair_prompt and repair.conversation[-2] == {"role": "assistant", "content": fenced(BROKEN)}
    assert [a.id for a in store.lineage(cand.metadata.id)] == [first.stored_id]
    assert "repair-1" in cand.metadata.tags


def test_repair_gives_up_after_the_configured_attempts(store, validator):
    backend = ReplayBackend(rules=[(".", fenced(BROKEN))])
    result = make_designer(store, validator, backend, repair_attempts=2).design_round("games", SKILL, 1)
    (cand,) = result.candidates
    assert not cand.admitted and len(cand.attempts) == 3 and cand.rejected_stage == "contract"
    assert result.summary()["repairs"] == 2
    # identical code each time: one stored record, retired
    assert {a.stored_id for a in cand.attempts} == {cand.attempts[0].stored_id}
    assert store.get(cand.attempts[0].stored_id).status == EnvStatus.retired


def test_leaking_hint_rejects_the_candidate(store, validator):
    secret = random.Random(42).randint(10, 99)  # LanternCodeEnv.reset(42)'s hidden code
    backend = ReplayBackend(
        rules=[("source code of an environment", f"The code is {secret}."),
               ("Design a new environment", fenced(LANTERN))]
    )
    result = make_designer(store, validator, backend, repair_attempts=0).design_round("games", SKILL, 1)
    (cand,) = result.candidates
    assert cand.valid and not cand.admitted and cand.rejected_stage == "hint"
    assert str(secret) in cand.reasons[0] and len(cand.hint.attempts) == 2
    assert store.get(cand.metadata.id).status == EnvStatus.retired


def test_same_code_twice_in_one_round_is_admitted_once(store, validator):
    backend = ReplayBackend(rules=[("source code of an environment", HINT), ("Design a new", fenced(LANTERN))])
    result = make_designer(store, validator, backend, repair_attempts=0).design_round("games", SKILL, 2)
    assert [c.admitted for c in result.candidates] == [True, False], [c.reasons for c in result.candidates]
    assert result.candidates[1].rejected_stage == "novelty"
    assert store.get(result.candidates[0].metadata.id).status == EnvStatus.admitted


def test_memory_examples_reach_the_prompt_and_become_parents(store, validator):
    add_env(store, 1, win_rate=0.5, regret=0.6)
    add_env(store, 2, win_rate=0.97, regret=0.0)
    backend = ReplayBackend(rules=[("source code of an environment", HINT),
                                   ("Design a new", fenced(variant("FireflyEnv", 20, 80)))])
    result = make_designer(store, validator, backend, repair_attempts=0).design_round(
        "games", SKILL, 1, difficulty=0.8, agent_stats=AgentStats(win_rate=0.7, episodes=64))
    (cand,) = result.candidates
    prompt = cand.conversation[1]["content"]
    assert "Make something DIFFERENT" in prompt and "Too easy" in prompt
    assert "hard (0.80" in prompt and "wins 70%" in prompt and "harder" in prompt
    assert "Grounding document" in prompt
    assert cand.memory_ids == ["Game1Env_x-v1", "Game2Env_x-v1"]
    assert cand.admitted
    assert [m.id for m in store.lineage(cand.metadata.id)] == cand.memory_ids


def test_seed_fixes_documents_and_prompts(store, validator):
    def prompts(seed):
        backend = ReplayBackend(rules=[(".", "no code")])
        make_designer(store, validator, backend, repair_attempts=0).design_round("games", SKILL, 3, seed=seed)
        return [c[1]["content"] for c in backend.calls]

    assert prompts(5) == prompts(5)
    assert prompts(5) != prompts(6)


def test_bad_requests_fail_before_any_generation(store, validator):
    backend = ReplayBackend()
    designer = make_designer(store, validator, backend)
    with pytest.raises(UnknownSkillError, match="no skill 'juggling'.*logical_deduction"):
        designer.design_round("games", "juggling", 2)
    with pytest.raises(SpadeError, match="unknown domain 'chess'"):
        designer.design_round("chess", SKILL, 2)
    with pytest.raises(SpadeError, match="positive"):
        designer.design_round("games", SKILL, 0)
    with pytest.raises(SpadeError, match="difficulty"):
        designer.design_round("games", SKILL, 1, difficulty=1.5)
    assert backend.calls == [] and store.count() == 0


def test_write_hint_for_the_trainer(store, validator):
    backend = ReplayBackend([HINT])
    result = make_designer(store, validator, backend).write_hint(LANTERN, domain="games")
    assert result.accepted and result.hint == HINT and result.completion is not None


def test_store_refusal_rejects_at_admission_and_loses_nothing_else(tmp_path, validator):
    from spade_core.errors import StoreError
    from spade_core.store import EnvStore

    class FullStore(EnvStore):
        def add(self, source, metadata, **kw):
            if metadata.hint:  # only the admitting write fails
                raise StoreError("disk full")
            return super().add(source, metadata, **kw)

    store = FullStore(f"sqlite:///{tmp_path / 's.db'}")
    backend = ReplayBackend(rules=[("source code of an environment", HINT),
                                   ("Validation rejected", fenced(LANTERN)), ("Design a new", fenced(BROKEN))])
    result = make_designer(store, validator, backend, repair_attempts=1).design_round("games", SKILL, 1)
    (cand,) = result.candidates
    assert not cand.admitted and cand.rejected_stage == "admission" and "disk full" in cand.reasons[0]
    assert cand.valid and cand.hint.accepted  # the work is in the result
    assert store.get(cand.attempts[0].stored_id).status == EnvStatus.retired  # the rejected attempt was kept
    store.close()


def test_a_reply_cut_off_at_the_token_limit_is_reported_as_such(store, validator):
    from spade_designer.llm import Completion

    class Truncating(ReplayBackend):
        def chat(self, conversations, **kw):
            out = super().chat(conversations, **kw)
            return [Completion(c.text, c.prompt_tokens, 256, "length") for c in out]

    backend = Truncating(rules=[(".", "```python\nclass HalfEnv:\n    def reset(self, seed=None):\n        return (")])
    result = make_designer(store, validator, backend, repair_attempts=1).design_round("games", SKILL, 1)
    (cand,) = result.candidates
    assert cand.rejected_stage == "extract" and "cut off at the 256-token limit" in cand.reasons[0]
    assert "cut off" in cand.attempts[1].conversation[-1]["content"]  # the repair prompt says so
