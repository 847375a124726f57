"""Design by editing, end to end: a parent from the real games seed pool in a real SQLite
store, the edit reply from the replay backend, the child through the real validation
pipeline in the sandbox, hints, admission, lineage and the edit in the stored metadata,
and what `spade show` prints about it."""

from __future__ import annotations

import json

import pytest
from spade_core.metadata import EnvMetadata, EnvStatus, StatsSnapshot
from spade_designer.config import DesignerConfig
from spade_designer.designer import Designer, NoParentError
from spade_designer.editing import APPLY, frontier
from spade_designer.knobs import read_knobs
from spade_designer.llm import ReplayBackend
from spade_designer.memory import StoreMemory

HINT = "Pick moduli that share no factor, then combine the remainders."
SKILL = "mathematical_reasoning"


def seed_env(name: str):
    from spade_core.plugins import get_plugins

    return next(s for s in get_plugins().domain("games").seed_envs if s.name == name)


def add_seed(store, name: str, *, win_rate: float | None = None, regret: float | None = None,
             hint: str | None = HINT) -> EnvMetadata:
    seed = seed_env(name)
    meta = EnvMetadata(name=seed.name, version=seed.version, domain="games", skill=seed.skill,
                       description=seed.description, difficulty=seed.difficulty, max_turns=seed.max_turns,
                       class_name=seed.class_name, tags=["seed"], hint=hint)
    stored = store.add(seed.source(), meta)
    store.set_status(stored.id, EnvStatus.admitted)
    if win_rate is not None:
        store.record_stats(stored.id, StatsSnapshot(policy_snapshot="step-1", samples=8, win_rate=win_rate,
                                                    regret=regret))
    return store.get(stored.id)


def make_designer(store, validator, backend, **config) -> Designer:
    return Designer(backend, store, validator, None, StoreMemory(store), DesignerConfig(**config))


def test_a_parameter_edit_is_validated_admitted_and_stored_with_its_parent(store, validator) -> None:
    parent = add_seed(store, "remainder_oracle", win_rate=0.5, regret=0.3)
    # the prompt is prefilled with the first knob's name; the reply continues it
    backend = ReplayBackend(rules=[("settings", "1000, max_mods = 4 and that is all")])
    result = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="parameter", seed=3)
    (cand,) = result.candidates
    assert cand.admitted, cand.reasons
    child = store.get(cand.metadata.id)
    assert child.status == EnvStatus.admitted and child.parent_ids == [parent.id]
    assert child.edit is not None and child.edit.kind == "parameter" and child.edit.parent_id == parent.id
    assert cand.attempts[0].prefill == "LIMIT="  # the first candidate starts with the first declared knob
    assert child.edit.values == {"LIMIT": 1000, "MAX_MODS": 4}
    assert child.edit.previous["MAX_MODS"] == 3
    assert "+    MAX_MODS = 4" in child.edit.diff and "-    MAX_MODS = 3" in child.edit.diff
    assert child.hint == HINT  # the parent's hint does not leak the child's secret
    assert "edit" in child.tags and "parameter-edit" in child.tags
    knobs = read_knobs(store.get_source(child.id)).values()
    assert knobs["MAX_MODS"] == 4
    assert [a.id for a in store.lineage(child.id)] == [parent.id]
    stages = [o.stage for o in cand.stages]
    assert stages[0] == APPLY and "novelty" in stages and stages[-1] == "admission"


def test_a_babbling_parent_hint_is_not_inherited_the_child_gets_a_new_one(store, validator) -> None:
    add_seed(store, "remainder_oracle", win_rate=0.5, regret=0.3, hint="Use the box-box-box-box method.")
    backend = ReplayBackend(rules=[("settings", "1000, max_mods = 4 and that is all"),
                                   ("source code", "Pick coprime moduli and combine the remainders.")])
    (cand,) = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="parameter", seed=3).candidates
    assert cand.admitted, cand.reasons
    assert store.get(cand.metadata.id).hint == "Pick coprime moduli and combine the remainders."


def test_a_parameter_edit_outside_the_declared_range_is_rejected_at_apply_naming_knob_and_range(
        store, validator) -> None:
    add_seed(store, "remainder_oracle")
    backend = ReplayBackend(rules=[("settings", "2000, MAX_MODS=9, MAX_GUESSES=2")])
    designer = make_designer(store, validator, backend)
    (cand,) = designer.edit_round("games", SKILL, 1, kind="parameter", seed=1).candidates
    assert not cand.admitted and cand.rejected_stage == APPLY
    (reason,) = cand.reasons
    assert "MAX_MODS" in reason and "9" in reason and "[2, 5]" in reason
    # nothing was validated or stored for it
    assert cand.attempts[0].report is None and cand.attempts[0].stored_id is None


def test_a_parameter_edit_that_changes_nothing_is_rejected_at_apply(store, validator) -> None:
    add_seed(store, "remainder_oracle")
    backend = ReplayBackend(rules=[("settings", "")])  # the prefilled knob with no value, or its current value
    (cand,) = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="parameter").candidates
    assert cand.rejected_stage == APPLY


def test_the_same_edit_twice_is_a_duplicate_the_second_time(store, validator) -> None:
    add_seed(store, "remainder_oracle")
    backend = ReplayBackend(rules=[("settings", "3000, MAX_MODS=4")])
    designer = make_designer(store, validator, backend)
    seed_only = frontier(store, "games", SKILL, band=(0.15, 0.85), size=1)
    (first,) = designer.edit_round("games", SKILL, 1, kind="parameter", parents=seed_only).candidates
    assert first.admitted, first.reasons
    # the child is now at the frontier too; the same edit of the same parent again:
    (again,) = designer.edit_round("games", SKILL, 1, kind="parameter", parents=seed_only).candidates
    assert not again.admitted and again.rejected_stage == "novelty"
    assert f"same code as stored environment {first.metadata.id}" in again.reasons[0]


def test_a_code_edit_as_a_unified_diff_is_applied_and_recorded(store, validator) -> None:
    parent = add_seed(store, "remainder_oracle", hint=None)
    diff = (
        "--- a.py\n+++ b.py\n"
        "@@ -80,3 +80,3 @@\n"
        "             if int(parts[1]) == self.secret:\n"
        '-                return "Correct! N = %d." % self.secret, 1.0, True\n'
        '+                return "Correct, well reasoned! N = %d." % self.secret, 1.0, True\n'
        "             if self.guesses >= self.max_guesses:\n"
    )
    backend = ReplayBackend(rules=[("Change one rule", diff), ("source code of an environment", HINT)])
    (cand,) = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="code").candidates
    assert cand.admitted, cand.reasons
    child = store.get(cand.metadata.id)
    assert child.edit.kind == "code" and child.parent_ids == [parent.id]
    assert "+                return \"Correct, well reasoned!" in child.edit.diff
    assert "well reasoned" in store.get_source(child.id)


def test_a_rewritten_method_replaces_the_parents_method(store, validator) -> None:
    add_seed(store, "remainder_oracle", hint=None)
    method = (
        "```python\n"
        "def solution(self):\n"
        '    """Guess the secret straight away."""\n'
        '    return ["\\\\boxed{guess %d}" % self.secret]\n'
        "```\n"
    )
    backend = ReplayBackend(rules=[("Change one rule", method), ("source code of an environment", HINT)])
    (cand,) = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="code").candidates
    assert cand.admitted, cand.reasons
    assert "Guess the secret straight away" in store.get_source(cand.metadata.id)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("@@ -5,2 +5,2 @@\n-this line is not in the parent\n+anything\n", "hunk 1 does not apply"),
        ("```python\ndef teleport(self):\n    return 1\n```", "has no method teleport"),
        ("```python\ndef step(self, action:\n```", "does not parse"),
        ("I would make it harder.", "neither a unified diff"),
        ("```python\nx = 1\n```", "rewrites no method"),
    ],
)
def test_a_code_edit_that_does_not_apply_is_rejected_at_apply(store, validator, reply, expected) -> None:
    add_seed(store, "remainder_oracle")
    backend = ReplayBackend(rules=[("Change one rule", reply)])
    (cand,) = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="code").candidates
    assert not cand.admitted and cand.rejected_stage == APPLY
    assert expected in cand.reasons[0]


def test_an_edit_that_breaks_the_game_is_rejected_by_validation_not_admitted(store, validator) -> None:
    add_seed(store, "remainder_oracle", hint=None)
    method = "```python\ndef solution(self):\n    return ['\\\\boxed{guess 0}']\n```"
    backend = ReplayBackend(rules=[("Change one rule", method)])
    (cand,) = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="code").candidates
    assert not cand.admitted and cand.rejected_stage == "feasibility"
    retired = store.get(cand.metadata.id)
    assert retired.status == EnvStatus.retired and retired.edit is not None


def test_no_parent_to_edit_is_a_clear_error(store, validator) -> None:
    designer = make_designer(store, validator, ReplayBackend(rules=[(".", "x")]))
    with pytest.raises(NoParentError, match="no admitted games environment of skill 'mathematical_reasoning'"):
        designer.edit_round("games", SKILL, 1)


def test_spade_show_prints_lineage_and_the_edit(validator, tmp_path, monkeypatch) -> None:
    from spade_core.app.cli import build_app
    from spade_core.paths import default_store_url
    from spade_core.store import EnvStore
    from typer.testing import CliRunner

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    with EnvStore(default_store_url(home)) as store:
        parent = add_seed(store, "remainder_oracle")
        backend = ReplayBackend(rules=[("settings", "1500, MAX_GUESSES=2")])
        (cand,) = make_designer(store, validator, backend).edit_round("games", SKILL, 1, kind="parameter").candidates
    assert cand.admitted, cand.reasons
    runner = CliRunner()
    shown = runner.invoke(build_app(), ["show", cand.metadata.id], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert f"parameter edit of {parent.id}: LIMIT 2000 -> 1500, MAX_GUESSES 3 -> 2" in text
    assert f"parents {parent.id}" in text
    as_json = runner.invoke(build_app(), ["show", cand.metadata.id, "--json"])
    data = json.loads(as_json.output)
    assert data["lineage"] == [parent.id]
    assert data["metadata"]["edit"]["values"] == {"LIMIT": 1500, "MAX_GUESSES": 2}
