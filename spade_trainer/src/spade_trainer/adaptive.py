"""Adaptive difficulty by a fixed rule: the fixed-pool baseline in the spirit of RLVE.

RLVE (adaptive verifiable environments), as we read its paper, keeps per environment a
window of difficulty levels ``[lo, hi]`` of a procedural generator; each problem is drawn at
a level chosen uniformly from the window; the agent's accuracy is tracked at the top level ``hi``, and once
``min_attempts`` problems there were played, an accuracy of at least ``raise_at`` moves the
top up one level (the bottom follows, so the window is at most ``window`` levels wide).
Every check starts the counts again, move or not, so each decision rests on fresh plays
(its released code does so: accuracy over all plays since the last move would let early
failures hold a learning agent back for good; our first version did that, and the window
of a real run never moved). Its problems start at difficulty 0, the bottom of the ladder.
No designer and no LLM: the rule sees only measured success.

This class adds one thing the issue asks for beyond that reading: an accuracy at the top of
at most ``lower_at`` moves the top back down one level (never below the bottom of the ladder), so a
top the agent cannot reach yet does not take a share of every update. Both thresholds, the
window and the attempts needed are fields. The ladder itself (which knob settings are level
0, 1, ...) belongs to the caller: :class:`AdaptivePool` builds it from the knobs' declared
directions for a self-play run. Under several processes every rank's plays reach every
rank's rule (:meth:`AdaptivePool.outcomes` gathered, then :meth:`AdaptivePool.apply` on all of
them in rank order), so the windows stay the same on every rank and each move rests on the
whole iteration's plays.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from spade_core.metadata import EnvMetadata
    from spade_core.store import EnvStore

    from .config import AdaptiveSettings


@dataclass
class AdaptiveDifficulty:
    """The window of one environment over ``levels`` levels (0 the easiest)."""

    levels: int
    start: int = 0
    window: int = 4
    raise_at: float = 0.9
    lower_at: float = 0.1
    min_attempts: int = 16
    lo: int = field(init=False)
    hi: int = field(init=False)
    attempts: int = field(default=0, init=False)
    wins: int = field(default=0, init=False)
    #: Every move: ``{"after": n_records, "from": hi, "to": hi', "accuracy": x}``.
    moves: list[dict[str, Any]] = field(default_factory=list, init=False)
    _records: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.levels < 1 or not 0 <= self.start < self.levels:
            raise ConfigError(f"adaptive difficulty: start {self.start} is not one of {self.levels} levels")
        if self.window < 1 or self.min_attempts < 1:
            raise ConfigError(f"adaptive difficulty: window ({self.window}) and min_attempts ({self.min_attempts}) "
                              "must be >= 1")
        if not 0 <= self.lower_at < self.raise_at <= 1:
            raise ConfigError(f"adaptive difficulty: need 0 <= lower_at < raise_at <= 1, got {self.lower_at}, "
                              f"{self.raise_at}")
        self.lo = self.hi = self.start

    def sample(self, rng: random.Random) -> int:
        """A level drawn uniformly from the window."""
        return rng.randint(self.lo, self.hi)

    def record(self, level: int, won: bool) -> None:
        """One played problem; only those at the window's top count towards a move."""
        self._records += 1
        if level == self.hi:
            self.attempts += 1
            self.wins += bool(won)

    def update(self) -> int:
        """Apply the rule once (call it after each batch of :meth:`record`); the move made:
        +1, -1 or 0."""
        if self.attempts < self.min_attempts:
            return 0
        accuracy = self.wins / self.attempts
        self.attempts = self.wins = 0  # every check rests on fresh plays, move or not
        step = 0
        if accuracy >= self.raise_at and self.hi < self.levels - 1:
            step = 1
        elif accuracy <= self.lower_at and self.hi > 0:
            step = -1
        if step:
            self.moves.append({"after": self._records, "from": self.hi, "to": self.hi + step,
                               "accuracy": round(accuracy, 4)})
            self.hi += step
            self.lo = min(self.hi, max(self.lo, self.hi - self.window + 1))
        return step

    def state(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "attempts_at_top": self.attempts, "wins_at_top": self.wins}


@dataclass
class _Ladder:
    """One pool environment under the rule: its knobs, its ladder and its window."""

    parent: EnvMetadata
    source: str
    knobs: Any  # spade_core.knobs.KnobSet
    ladder: list[dict[str, Any]]
    rule: AdaptiveDifficulty | None
    #: Why it does not adapt (no knob with a declared direction, an unreadable block).
    why_fixed: str = ""


class AdaptivePool:
    """The adaptive fixed-pool baseline of a self-play run (``[selfplay.adaptive]``): every
    pool environment whose knobs declare which way is harder (``HARDER``) gets a ladder of
    knob settings, easiest first (:func:`spade_core.knobs.difficulty_ladder`), and an
    :class:`AdaptiveDifficulty` window on it starting at the bottom (RLVE's difficulty 0).

    Each time the loop chooses a pool environment, :meth:`instance` draws a level from its
    window and hands back the environment at that level: a child stored in the run's store
    (status ``candidate``, so never drawn into the pool itself; the parent in its lineage,
    the knob values as a ``parameter`` edit; the same level is the same stored child). The
    child differs from its parent only in declared knob literals, checked against their
    declared ranges. :meth:`outcomes` and :meth:`apply` give the rule every unhinted play's result; an
    environment without a direction is played as it is."""

    def __init__(self, settings: AdaptiveSettings, store: EnvStore) -> None:
        self.settings = settings
        self.store = store
        self.envs: dict[str, _Ladder] = {}
        #: child id -> (parent id, level)
        self.children: dict[str, tuple[str, int]] = {}

    def _ladder(self, meta: EnvMetadata) -> _Ladder:
        found = self.envs.get(meta.id)
        if found is not None:
            return found
        from spade_core.knobs import KnobDeclarationError, difficulty_ladder, read_knobs

        source = self.store.get_source(meta.id)
        s = self.settings
        try:
            knobs = read_knobs(source, meta.class_name)
        except KnobDeclarationError as exc:
            found = _Ladder(meta, source, None, [], None, f"its knobs cannot be read: {exc}")
        else:
            ladder = difficulty_ladder(knobs, s.levels)
            if len(ladder) < 2:
                found = _Ladder(meta, source, knobs, ladder, None, "no knob declares which way is harder (HARDER)")
            else:
                rule = AdaptiveDifficulty(levels=len(ladder), start=0, window=s.window, raise_at=s.raise_at,
                                          lower_at=s.lower_at, min_attempts=s.min_attempts)
                found = _Ladder(meta, source, knobs, ladder, rule)
        self.envs[meta.id] = found
        return found

    def instance(self, meta: EnvMetadata, rng: random.Random) -> EnvMetadata:
        """What to play for pool environment ``meta`` now: its child at a level drawn from
        its window, or ``meta`` itself when it does not adapt."""
        entry = self._ladder(meta)
        if entry.rule is None:
            return meta
        level = entry.rule.sample(rng)
        child = self._child(entry, level)
        self.children[child.id] = (meta.id, level)
        return child

    def _child(self, entry: _Ladder, level: int) -> EnvMetadata:
        from spade_core.knobs import apply_values
        from spade_core.metadata import EnvEdit, EnvMetadata, EnvStatus

        parent = entry.parent
        values = entry.ladder[level]
        previous = entry.knobs.values()
        changed = {k: v for k, v in values.items() if previous.get(k) != v}
        if not changed:  # the level is the environment as written
            return parent
        source = apply_values(entry.source, entry.knobs, changed)
        data = parent.model_dump(mode="json", exclude={"id", "code_hash", "stats", "validation", "created_at",
                                                       "updated_at", "edit", "hint"})
        data.update(name=f"{parent.name}.level{level}", version=1, status=EnvStatus.candidate.value,
                    parent_ids=[parent.id], tags=sorted({*parent.tags, "adaptive"}),
                    edit=EnvEdit(kind="parameter", parent_id=parent.id, values=changed,
                                 previous={k: previous[k] for k in changed}).model_dump(mode="json"))
        return self.store.add(source, EnvMetadata.model_validate(data))

    def outcomes(self, results: Iterable[tuple[str, Iterable[bool]]]) -> list[tuple[str, int, list[bool]]]:
        """``(env id, wins of its unhinted plays)`` for the environments just played, as
        ``(parent id, level, wins)`` of the adapting ones: what :meth:`apply` takes, and what
        ranks exchange (a child's id is this process's; its parent and level are every rank's)."""
        out: list[tuple[str, int, list[bool]]] = []
        for env_id, wins in results:
            parent_id, level = self.children.get(env_id, (env_id, None))
            entry = self.envs.get(parent_id)
            if entry is None or entry.rule is None or level is None:
                continue
            out.append((parent_id, level, [bool(w) for w in wins]))
        return out

    def apply(self, outcomes: Iterable[tuple[str, int, list[bool]]]) -> dict[str, Any]:
        """Each adapting parent's rule records its plays of ``outcomes`` (:meth:`outcomes`,
        of one process or of all of them) and applies itself once. Returns, per parent id, its
        window after the move, the move made and the plays it saw."""
        touched: dict[str, int] = {}
        for parent_id, level, wins in outcomes:
            entry = self.envs.get(parent_id)
            if entry is None:  # drawn by another rank only: its ladder is built here too
                entry = self._ladder(self.store.get(parent_id))
            if entry.rule is None:
                continue
            for won in wins:
                entry.rule.record(level, bool(won))
            touched[parent_id] = touched.get(parent_id, 0) + len(wins)
        out: dict[str, Any] = {}
        for parent_id, plays in touched.items():
            rule = self.envs[parent_id].rule
            assert rule is not None
            move = rule.update()
            out[parent_id] = {**rule.state(), "move": move, "plays": plays, "levels": len(self.envs[parent_id].ladder)}
        return out

    def state(self) -> dict[str, Any]:
        """Every environment's window and its ladder's ends (for the run's records)."""
        out: dict[str, Any] = {}
        for pid, e in sorted(self.envs.items()):
            if e.rule is None:
                out[pid] = {"adapts": False, "why": e.why_fixed}
            else:
                out[pid] = {"adapts": True, **e.rule.state(), "levels": len(e.ladder),
                            "easiest": e.ladder[0], "hardest": e.ladder[-1], "moves": list(e.rule.moves)}
        return out

    def restore(self, state: dict[str, Any], metas: Iterable[EnvMetadata]) -> None:
        """Windows from :meth:`state` (a resumed run), for the pool environments ``metas``."""
        for meta in metas:
            saved = state.get(meta.id)
            entry = self._ladder(meta)
            if not saved or entry.rule is None or not saved.get("adapts"):
                continue
            rule = entry.rule
            rule.lo, rule.hi = int(saved["lo"]), int(saved["hi"])
            rule.attempts, rule.wins = int(saved["attempts_at_top"]), int(saved["wins_at_top"])
            rule.moves = list(saved.get("moves", []))


__all__ = ["AdaptiveDifficulty", "AdaptivePool"]
