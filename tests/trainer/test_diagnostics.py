"""The paper's diagnostics of a run: learnable share, diversity, reward levels, collapse."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest
from spade_trainer.diagnostics import diagnose, learnable_share, vendi_score

GAME_A = '''
class LanternEnv:
    SIZE = 4
    def reset(self, seed=None):
        self.lit = [False] * self.SIZE
        return "Light every lantern.", {}
    def step(self, action):
        i = int(action)
        self.lit[i] = not self.lit[i]
        return str(self.lit), float(all(self.lit)), all(self.lit), False, {}
'''
GAME_B = '''
import random
class MerchantEnv:
    """Buy low, sell high across three towns."""
    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.gold, self.goods = 100, 0
        self.prices = {town: self.rng.randint(5, 20) for town in ("north", "south", "east")}
        return "You have 100 gold. Prices: %s" % self.prices, {}
    def step(self, action):
        verb, town = action.split()
        price = self.prices[town]
        if verb == "buy" and self.gold >= price:
            self.gold -= price
            self.goods += 1
        elif verb == "sell" and self.goods:
            self.gold += price
            self.goods -= 1
        return "gold %d goods %d" % (self.gold, self.goods), 0.0, self.gold >= 150, False, {}
'''


def _design(it: int, env_id: str, code: str, admitted: bool = True) -> dict:
    return {"iteration": it, "env_id": env_id, "admitted": admitted, "code": code}


def test_learnable_share_counts_win_rates_between_a_fifth_and_four_fifths() -> None:
    record = {"per_env": {"a": {"win_rate": 0.0}, "b": {"win_rate": 0.2}, "c": {"win_rate": 0.5},
                          "d": {"win_rate": 0.8}, "e": {"win_rate": 1.0}}}
    assert learnable_share(record) == pytest.approx(3 / 5)
    assert learnable_share({"per_env": {}}) is None


def test_vendi_score_runs_from_one_for_copies_to_n_for_strangers() -> None:
    assert vendi_score(np.ones((4, 4))) == pytest.approx(1.0)
    assert vendi_score(np.eye(4)) == pytest.approx(4.0)


def test_copies_and_light_edits_are_repeats_and_different_games_are_not() -> None:
    edited = GAME_A.replace("SIZE = 4", "SIZE = 5").replace("LanternEnv", "LampEnv")
    records = [{"iteration": i, "per_env": {}} for i in (1, 2, 3, 4)]
    designs = [_design(1, "a", GAME_A), _design(2, "b", GAME_B), _design(3, "c", edited),
               _design(4, "d", GAME_A), _design(4, "x", GAME_B + "\n# never admitted\n", admitted=False)]
    d = diagnose(records, designs)
    assert d.admitted == [1, 1, 1, 1] and d.repeats == [0, 0, 1, 1]
    assert [env for _, env, _ in d.repeated] == ["c", "d"]
    assert "class LanternEnv admitted 1 time(s) before" in d.repeated[1][2]
    # two different games keep diversity / n near 1; copies pull it down
    assert d.diversity[1] > 0.8 and d.diversity[3] < d.diversity[1]


def test_collapse_is_flagged_when_most_recent_admissions_repeat() -> None:
    records = [{"iteration": i, "per_env": {}} for i in range(1, 6)]
    fresh = [_design(1, "a", GAME_A), _design(2, "b", GAME_B)]
    assert not diagnose(records, fresh).collapsed
    copies = fresh + [_design(i, f"c{i}", GAME_A) for i in (3, 4, 5)]
    assert diagnose(records, copies).collapsed


def test_the_report_shows_the_diagnostics(tmp_path: Path) -> None:
    from spade_trainer.metrics import MetricsLog
    from spade_trainer.report import write_report
    from spade_trainer.run_archive import RunArchive

    log = MetricsLog(tmp_path)
    for i in (1, 2):
        log.write({"iteration": i, "designed": 1, "admitted": 1, "envs_played": 2,
                   "per_env": {"a": {"win_rate": 0.5, "reward_levels": 3}, "b": {"win_rate": 1.0, "reward_levels": 1}}})
    archive = RunArchive(tmp_path)
    for i, env in ((1, "a"), (2, "b")):
        archive.record_designs(i, [NS(skill="logic", env_id=env, valid=True, admitted=True, failed_stage=None,
                                      stages_passed=(), reasons=(), novelty=None, source=GAME_A, hint=None)])
    page = write_report(tmp_path).read_text()
    assert "<h2>Diagnostics</h2>" in page and 'src="diagnostics.png"' in page
    assert "1 of 2 admissions repeat" in page and "class LanternEnv admitted 1 time(s) before" in page
    assert (tmp_path / "report" / "reward_levels.png").is_file()
