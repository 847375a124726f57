"""The self-play loop's operator mix: each design is written or edited, the choice and what
it earned are recorded per design in metrics.jsonl, and the bandit learns from it.

The loop runs for real (tiny model, TRL step, sandbox pool, SQLite store, the real
designer and validator); only the designer's LLM is the replay backend, so the edit reply
is known and the child is admitted."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from spade_designer.operators import EDIT, WRITE, OperatorMix
from spade_trainer.config import load_selfplay_config
from spade_trainer.selfplay import SelfPlayRun

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def test_a_fixed_share_draws_edits_at_that_rate() -> None:
    mix = OperatorMix(share=0.25)
    ops = mix.choose(4000, random.Random(0))
    assert abs(ops.count(EDIT) / 4000 - 0.25) < 0.03
    assert set(OperatorMix(share=0.0).choose(50, random.Random(1))) == {WRITE}
    assert set(OperatorMix(share=1.0).choose(50, random.Random(1))) == {EDIT}


def test_the_bandit_moves_to_the_operator_that_gets_admitted_and_keeps_a_floor() -> None:
    mix = OperatorMix(share=0.5, mode="bandit", min_share=0.1)
    for _ in range(20):
        mix.update(EDIT, admitted=True, reward=0.6)
        mix.update(WRITE, admitted=False, reward=-0.4)
    assert mix.edit_probability() == pytest.approx(0.9)
    summary = mix.summary()
    assert summary[EDIT] == {"designs": 20, "admitted": 20, "reward_mean": pytest.approx(0.6)}
    assert summary[WRITE]["admitted"] == 0
    with pytest.raises(ValueError, match="unknown operator"):
        mix.update("mutate", admitted=True, reward=1.0)
    with pytest.raises(ValueError, match="share must be in"):
        OperatorMix(share=1.5)


def _replay_stage(run: SelfPlayRun):
    from spade_designer.assembly import assemble_designer
    from spade_designer.llm import ReplayBackend
    from spade_trainer.designer_stage import DesignerStage, designer_config_of
    from spade_trainer.edit_stage import OperatorDesignStage

    # the edit prompt is prefilled with one knob's name ("LIMIT="); a reply that leaves it
    # empty and names its knobs works whichever knob the prompt started with
    backend = ReplayBackend(rules=[("Game `remainder_oracle`", " , LIMIT=1000, MAX_MODS=4"),
                                   ("Game `polynomial_probe`", " , SPREAD=12"),
                                   ("source code of an environment", "Choose moduli without common factors."),
                                   (".", "not an environment")])
    config = designer_config_of(run.config)
    designer = assemble_designer(run.spade_config, config, store=run.store, plugins=run.plugins, backend=backend)
    return OperatorDesignStage(DesignerStage(designer, run.config.domain), OperatorMix.from_settings(config.edit))


@pytest.mark.slow
def test_the_loop_records_each_designs_operator_and_feeds_the_mix(tmp_path: Path) -> None:
    cfg = load_selfplay_config(
        preset="tiny",
        overrides=[f'run_dir="{tmp_path / "run"}"', "iterations=1", "designs_per_skill=3",
                   "designer.edit.share=0.5", 'designer.edit.kind="parameter"',
                   'skills=["mathematical_reasoning"]'],
    )
    run = SelfPlayRun(cfg, design_stage_factory=_replay_stage)
    run.run()
    (line,) = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    designs = line["designs"]
    assert len(designs) == line["designed"] == 3
    ops = [d["operator"] for d in designs]
    assert set(ops) <= {WRITE, EDIT} and EDIT in ops
    for d in designs:
        if d["operator"] == EDIT:
            assert d["parent_id"].startswith(("remainder_oracle", "polynomial_probe"))
        else:
            assert not d["admitted"] and d["failed_stage"] == "extract"
    counts = line["operators"]
    assert sum(c["designs"] for c in counts.values()) == 3
    assert counts[EDIT]["admitted"] == sum(1 for d in designs if d["operator"] == EDIT and d["admitted"])
    mix = line["operator_mix"]
    assert mix["mode"] == "fixed" and mix[EDIT]["designs"] == ops.count(EDIT)
    # an admitted edit was stored with its parent and played
    admitted = [d for d in designs if d["admitted"]]
    assert admitted and all(d["operator"] == EDIT for d in admitted)
    assert line["admitted"] == len(admitted)
    from spade_core.store import EnvStore

    with EnvStore(f"sqlite:///{tmp_path / 'run' / 'store.db'}") as store:
        children = [m for m in store.find(domain="games") if m.edit is not None]
        assert {m.status.value for m in children} <= {"admitted", "retired"}
        assert any(m.status.value == "admitted" and m.edit.values in ({"LIMIT": 1000, "MAX_MODS": 4}, {"SPREAD": 12})
                   for m in children)
        for m in children:
            assert m.parent_ids == [m.edit.parent_id]


def test_the_configuration_the_command_loaded_reaches_the_designer_and_its_validator(tmp_path: Path) -> None:
    """A --config elsewhere (not ./spade.toml, not SPADE_HOME's) is what the designer stage
    validates with: nothing below the command looks a configuration up by itself."""
    from spade_core.config import load_config
    from spade_core.plugins import get_plugins
    from spade_core.store import EnvStore
    from spade_trainer.designer_stage import build_designer_stage

    elsewhere = tmp_path / "elsewhere" / "team.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("[validation]\nfuzz_examples = 7\ncall_time_bound_s = 0.75\n")
    cfg = load_selfplay_config(preset="tiny", overrides=[f'run_dir="{tmp_path / "run"}"'])
    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        stage = build_designer_stage(None, None, cfg, load_config(elsewhere), store=store, plugins=get_plugins())
        try:
            vconfig = stage.designer.validator.config
            assert (vconfig.fuzz_examples, vconfig.call_time_bound_s) == (7, 0.75)
            assert stage.designer.store is store
        finally:
            stage.close()
