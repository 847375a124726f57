"""The ablation knobs in a real run (tiny model, real sandbox, store and TRL steps): a fixed
pool taken from another store, a designer that designs but is not trained, and designers
assembled without a corpus or a memory. The design stage of the no-training run is the
scripted double of test_selfplay.py (a tiny random model writes nothing that passes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import get_plugins
from spade_core.store import EnvStore
from spade_designer.assembly import create_corpus, create_memory
from spade_trainer.config import load_selfplay_config
from spade_trainer.designer_stage import designer_config_of
from spade_trainer.errors import ConfigError
from spade_trainer.run_pool import import_named_pool, import_store_pool
from spade_trainer.selfplay import SelfPlayRun

from .envs import GUESS_ENV
from .scripted import ScriptedDesignStage

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _other_store(path: Path) -> str:
    """A store with one admitted environment (with a hint) and one retired."""
    with EnvStore(f"sqlite:///{path}") as store:
        kept = store.add(GUESS_ENV, EnvMetadata(name="guess_pool", domain="games", skill="logical_deduction",
                                                max_turns=3, hint="Try small numbers first."))
        store.set_status(kept.id, EnvStatus.admitted)
        gone = store.add(GUESS_ENV + "\n# retired\n", EnvMetadata(name="guess_gone", domain="games",
                                                                   skill="logical_deduction", max_turns=3))
        store.set_status(gone.id, EnvStatus.admitted)
        store.set_status(gone.id, EnvStatus.retired)
        return kept.id


@pytest.mark.slow
def test_a_fixed_pool_from_another_store_trains_the_agent_alone(tmp_path: Path) -> None:
    kept = _other_store(tmp_path / "other.db")
    cfg = load_selfplay_config(preset="tiny+baseline", overrides=[
        f'run_dir="{tmp_path / "run"}"', "iterations=1", "import_seed_pool=false",
        f'pool_from="{tmp_path / "other.db"}"'])
    run = SelfPlayRun(cfg)
    run.run()
    assert run.stage is None  # no designer was built
    (m,) = _metrics(tmp_path / "run")
    # a pool of one environment is played the iteration's whole budget: 2 environments x K = 2
    assert m["designed"] == 0 and m["envs_played"] == 1 and m["episodes"] == 4
    assert list(m["per_env"]) == [kept] and m["per_env"][kept]["regret"] is None
    # the update was handed the agent's samples alone (it passes only when one carries signal)
    assert m["samples"]["designer_samples"] == 0 and m["train"]["samples"] == m["samples"]["agent_samples"] == 4
    with EnvStore(f"sqlite:///{tmp_path / 'run' / 'store.db'}", create=False) as store:
        (only,) = store.find(status=EnvStatus.admitted)
        assert only.id == kept and only.hint == "Try small numbers first."
        stats = only.latest_stats
        assert stats is not None and stats.regret is None and stats.samples == 4


def test_a_pool_store_that_is_missing_or_empty_is_named(tmp_path: Path) -> None:
    sets = [f'run_dir="{tmp_path / "run"}"', "import_seed_pool=false"]
    missing = load_selfplay_config(preset="tiny+baseline", overrides=[*sets, f'pool_from="{tmp_path / "no.db"}"'])
    run = SelfPlayRun(missing)
    run.run_dir.mkdir(parents=True)
    run._open_store()
    with pytest.raises(ConfigError, match="no such store file"):
        import_store_pool(run.store, missing.pool_from, "games")
    with EnvStore(f"sqlite:///{tmp_path / 'empty.db'}"):
        pass
    with pytest.raises(ConfigError, match="holds no admitted environment of domain 'games'"):
        import_store_pool(run.store, tmp_path / "empty.db", "games")
    run.close()


def test_a_named_pool_holds_exactly_its_environments_at_their_knob_settings(tmp_path: Path) -> None:
    cfg = load_selfplay_config(preset="tiny+baseline", overrides=[
        f'run_dir="{tmp_path / "run"}"', 'pool=["higher_lower:CANDIDATES=5,GUESSES=3", "code_breaker"]'])
    run = SelfPlayRun(cfg)
    run.run_dir.mkdir(parents=True)
    run._open_store()
    import_named_pool(run.store, cfg.pool, "games", run.plugins, run.spade_config)
    import_named_pool(run.store, cfg.pool, "games", run.plugins, run.spade_config)  # idempotent
    pool = {m.name: m for m in run.store.find(status=EnvStatus.admitted)}
    assert set(pool) == {"higher_lower.candidates5.guesses3", "code_breaker"}
    variant = pool["higher_lower.candidates5.guesses3"]
    assert variant.parent_ids == ["higher_lower-v1"] and variant.edit is not None
    assert variant.edit.values == {"CANDIDATES": 5, "GUESSES": 3}
    assert "CANDIDATES = 5" in run.store.get_source(variant.id)
    with pytest.raises(ConfigError, match="CANDIDATES"):
        import_named_pool(run.store, ["higher_lower:CANDIDATES=99"], "games", run.plugins, run.spade_config)
    with pytest.raises(ConfigError, match="not the run's 'tooluse'"):
        import_named_pool(run.store, ["higher_lower"], "tooluse", run.plugins, run.spade_config)
    run.close()


@pytest.mark.slow
def test_without_designer_training_designs_are_rewarded_but_not_trained(tmp_path: Path) -> None:
    cfg = load_selfplay_config(preset="tiny+no_designer_training", overrides=[
        f'run_dir="{tmp_path / "run"}"', "iterations=1", "envs_per_iteration=2"])
    SelfPlayRun(cfg, design_stage_factory=ScriptedDesignStage).run()
    (m,) = _metrics(tmp_path / "run")
    assert m["designed"] == 2 and m["admitted"] == 1 and m["regret_mean"] is not None
    assert m["designer_reward_mean"] is not None  # rewarded and logged as usual
    assert m["designer_samples_trained"] == 0 and m["samples"]["designer_samples"] == 0
    assert m["samples"]["agent_samples"] == 4 and m["train"]["samples"] == 4


@pytest.mark.parametrize(("ablation", "corpus", "memory"), [
    (None, True, True), ("no_corpus", False, True), ("no_memory", True, False)])
def test_the_designer_is_assembled_without_its_corpus_or_memory(
    ablation: str | None, corpus: bool, memory: bool, tmp_path: Path,
) -> None:
    config = designer_config_of(load_selfplay_config(preset=["tiny", *([ablation] if ablation else [])]))
    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        assert (create_corpus(config, get_plugins()) is not None) is corpus
        assert (create_memory(config, get_plugins(), store) is not None) is memory


def test_the_logged_design_reward_is_the_reward_the_design_trains_with() -> None:
    from spade_trainer.design_protocol import DesignedCandidate
    from spade_trainer.edit_stage import record_designs
    from spade_trainer.regret import RegretEstimate
    from spade_trainer.role_samples import designer_samples

    # mean unhinted return 0.5, solve rate 0.25: the solve-rate ablation's plateau reads 0.25
    est = RegretEstimate("g-v1", (1.0, 1.0, 1.0, 1.0), (1.0, 0.5, 0.5, 0.0))
    hung = RegretEstimate("g-v1", (1.0,), (0.0,), hung=1)
    candidate = DesignedCandidate("logical_deduction", True, True, "g-v1", None, ("static",), None, [1], [2], [-1.0])
    for preset, estimate, expected in (("tiny", est, 1.0), ("tiny+solve_rate_reward", est, pytest.approx(0.4)),
                                       ("tiny", hung, None)):
        cfg = load_selfplay_config(preset=preset)
        data: dict = {}
        record_designs(None, [candidate], {"g-v1": estimate}, cfg.reward, data)
        trained = designer_samples([candidate], {"g-v1": estimate}, {}, config=cfg, plugins=get_plugins())
        assert data["designs"][0]["reward"] == trained[0].reward
        if expected is not None:
            assert data["designs"][0]["reward"] == expected


#: GuessEnv with a declared knob: the number range, harder when higher.
KNOBBED_GUESS = GUESS_ENV.replace(
    'class GuessEnv:\n    """Guess a number in [1, 4]; the hint names it."""\n',
    'class GuessEnv:\n    """Guess a number in [1, TOP]."""\n    TOP = 4\n    KNOBS = {"TOP": (int, 2, 9)}\n'
    '    HARDER = {"TOP": "higher"}\n').replace("self.rng.randint(1, 4)", "self.rng.randint(1, self.TOP)")


@pytest.mark.slow
def test_the_adaptive_baseline_plays_each_pool_environment_at_a_level_of_its_window(tmp_path: Path) -> None:
    """A real run of the adaptive preset: the pool environment with a direction is played as
    its child at the bottom of its ladder (a stored candidate with the parent in its lineage),
    the rule sees every unhinted play, and a checkpoint keeps the windows."""
    with EnvStore(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        parent = store.add(KNOBBED_GUESS, EnvMetadata(name="guess_knobs", domain="games", skill="logical_deduction",
                                                      max_turns=3))
        store.set_status(parent.id, EnvStatus.admitted)
    cfg = load_selfplay_config(preset="tiny+adaptive", overrides=[
        f'run_dir="{tmp_path / "run"}"', "iterations=2", "import_seed_pool=false", "checkpoint_every=2",
        f'pool_from="{tmp_path / "pool.db"}"', "adaptive.min_attempts=2", "adaptive.levels=4"])
    run = SelfPlayRun(cfg)
    run.run()
    first, second = _metrics(tmp_path / "run")
    child = "guess_knobs.level0-v1"
    assert list(first["per_env"]) == [child]  # level 0: TOP = 2, the ladder's bottom
    assert first["adaptive"][parent.id]["levels"] == 4 and "move" in first["adaptive"][parent.id]
    with EnvStore(f"sqlite:///{tmp_path / 'run' / 'store.db'}", create=False) as store:
        made = store.get(child)
        assert made.status == EnvStatus.candidate and made.parent_ids == [parent.id]
        assert made.edit is not None and made.edit.values == {"TOP": 2} and made.edit.previous == {"TOP": 4}
        assert "TOP = 2" in store.get_source(child)
        assert [m.id for m in store.find(status=EnvStatus.admitted)] == [parent.id]  # the pool stays the pool
    moved = first["adaptive"][parent.id]["move"]
    hi = first["adaptive"][parent.id]["hi"]
    assert hi == max(0, moved)  # from the bottom: up one or stay
    assert set(second["per_env"]) <= {f"guess_knobs.level{n}-v1" for n in range(hi + 1)}
    (checkpoint,) = (tmp_path / "run" / "checkpoints").iterdir()
    state = json.loads(next(checkpoint.rglob("selfplay_state.json")).read_text())
    assert state["adaptive"][parent.id]["adapts"] is True and state["adaptive"][parent.id]["levels"] == 4
