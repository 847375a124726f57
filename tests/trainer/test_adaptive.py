"""The adaptive fixed-pool rule (RLVE-style): the window moves only on measured success at
its top, after enough plays there, one level at a time, never off the ladder."""

from __future__ import annotations

import random

import pytest
from spade_trainer.adaptive import AdaptiveDifficulty
from spade_trainer.errors import ConfigError


def _play(rule: AdaptiveDifficulty, level: int, wins: int, losses: int) -> int:
    for _ in range(wins):
        rule.record(level, True)
    for _ in range(losses):
        rule.record(level, False)
    return rule.update()


def test_success_at_the_top_raises_it_once_enough_plays_were_counted() -> None:
    rule = AdaptiveDifficulty(levels=5, start=1, window=2, min_attempts=10)
    assert _play(rule, 1, 9, 0) == 0  # 9 plays: not enough yet
    assert _play(rule, 1, 1, 0) == 1 and (rule.lo, rule.hi) == (1, 2)
    assert rule.attempts == rule.wins == 0  # the counts start again at the new top
    assert _play(rule, 1, 20, 0) == 0  # plays below the top do not count
    assert _play(rule, 2, 9, 1) == 1 and (rule.lo, rule.hi) == (2, 3)  # 0.9: the window slides, width 2
    assert rule.moves == [{"after": 10, "from": 1, "to": 2, "accuracy": 1.0},
                          {"after": 40, "from": 2, "to": 3, "accuracy": 0.9}]


def test_failure_at_the_top_lowers_it_and_middling_success_keeps_it() -> None:
    rule = AdaptiveDifficulty(levels=5, start=2, window=3, min_attempts=10)
    assert _play(rule, 2, 5, 5) == 0 and rule.hi == 2  # 0.5: stays
    assert rule.attempts == rule.wins == 0  # and the next check rests on fresh plays only
    assert _play(rule, 2, 9, 1) == 1 and rule.hi == 3  # 0.9 of the new plays: up (0.7 of all ten and ten)
    rule = AdaptiveDifficulty(levels=5, start=2, window=3, min_attempts=10)
    assert _play(rule, 2, 1, 9) == -1 and (rule.lo, rule.hi) == (1, 1)


def test_the_window_never_leaves_the_ladder() -> None:
    top = AdaptiveDifficulty(levels=3, start=2, min_attempts=1)
    assert _play(top, 2, 5, 0) == 0 and top.hi == 2
    bottom = AdaptiveDifficulty(levels=3, start=0, min_attempts=1)
    assert _play(bottom, 0, 0, 5) == 0 and bottom.hi == 0


def test_levels_are_drawn_from_the_window_only() -> None:
    rule = AdaptiveDifficulty(levels=10, start=3, window=3, min_attempts=1)
    for _ in range(4):
        _play(rule, rule.hi, 1, 0)
    assert (rule.lo, rule.hi) == (5, 7)
    rng = random.Random(0)
    drawn = {rule.sample(rng) for _ in range(200)}
    assert drawn == {5, 6, 7}


@pytest.mark.parametrize("bad", [{"levels": 0}, {"start": 5}, {"window": 0}, {"min_attempts": 0},
                                 {"raise_at": 0.1, "lower_at": 0.1}, {"raise_at": 1.5}])
def test_nonsense_settings_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="adaptive difficulty"):
        AdaptiveDifficulty(**{"levels": 5, **bad})  # type: ignore[arg-type]


def test_the_pool_adapts_directed_environments_keeps_the_rest_and_restores_its_windows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from spade_core.metadata import EnvMetadata, EnvStatus
    from spade_core.store import EnvStore
    from spade_trainer.adaptive import AdaptivePool
    from spade_trainer.config import AdaptiveSettings

    knobbed = ("class E:\n    TOP = 4\n    KNOBS = {'TOP': (int, 2, 9)}\n    HARDER = {'TOP': 'higher'}\n"
               "    def reset(self, seed=None):\n        return 'go', {}\n")
    plain = "class F:\n    def reset(self, seed=None):\n        return 'go', {}\n"
    settings = AdaptiveSettings(enabled=True, levels=3, min_attempts=4, window=2)
    with EnvStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        a = store.add(knobbed, EnvMetadata(name="a", domain="games", skill="s", class_name="E"))
        b = store.add(plain, EnvMetadata(name="b", domain="games", skill="s", class_name="F"))
        pool = AdaptivePool(settings, store)
        rng = random.Random(0)
        child = pool.instance(a, rng)
        assert child.name == "a.level0" and child.status == EnvStatus.candidate and "TOP = 2" in store.get_source(child.id)
        assert pool.instance(b, rng) is b  # no direction: played as it is
        assert pool.instance(a, rng).id == child.id  # the same level is the same stored child
        moved = pool.apply(pool.outcomes([(child.id, [True] * 4), (b.id, [True] * 4)]))
        assert moved == {a.id: {"lo": 0, "hi": 1, "attempts_at_top": 0, "wins_at_top": 0, "move": 1, "plays": 4, "levels": 3}}
        saved = pool.state()
        assert saved[b.id] == {"adapts": False, "why": "no knob declares which way is harder (HARDER)"}
        assert saved[a.id]["easiest"] == {"TOP": 2} and saved[a.id]["hardest"] == {"TOP": 9}
        again = AdaptivePool(settings, store)
        again.restore(saved, [a, b])
        assert again.state() == saved
