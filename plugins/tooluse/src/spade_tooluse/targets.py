"""The grading fast path of :class:`~spade_tooluse.base.ToolEnv`: each turn's target state,
replayed from the reference calls on a fresh instance and cached per episode.

At ``reset`` the reference calls are replayed turn by turn on a fresh instance built
from the same seed; the state after turn *k* is the target of turn *k*. An instance
remembers the targets of its last :data:`TARGET_CACHE_SIZE` episodes, keyed by seed,
built state and reference calls, so resetting it on the same seed again replays nothing
(validation resets one instance on the same few seeds over a hundred times).

A mixin of ``ToolEnv``, apart from it because it changes with how targets are computed
and cached, not with the environment's contract; ``spade_tooluse.plain_grading`` keeps
the plain procedure as the reference the tests compare it with. It uses the base's
``_te_start``, ``_te_dispatch``, ``_te_comparable`` and ``_te_predicate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from .calls import ToolEnvError, as_call

if TYPE_CHECKING:
    from .calls import Outcome

#: Episodes (seed, built state, reference calls) whose targets one instance remembers.
TARGET_CACHE_SIZE = 8


class TargetReplay:
    """The target cache and replay of ``ToolEnv`` (see the module docstring)."""

    # What ToolEnv provides.
    turns: list[Any]
    _te_built_state: str
    _te_target_cache: dict[tuple[int, str, str], list[dict[str, Any]]]

    def _te_start(self, seed: int) -> None: ...
    def _te_dispatch(self, c: Any, *, rollback: bool = True) -> Outcome: ...
    def _te_comparable(self, state: dict[str, Any]) -> dict[str, Any]: ...
    def _te_predicate(self, turn: Any) -> bool: ...

    def _te_cached_targets(self, seed: int) -> list[dict[str, Any]]:
        """The targets of this episode, replayed once per seed and built episode.

        Validation resets one instance on the same few seeds over a hundred times; the
        replay costs a second ``build()`` plus every reference call. An entry is reused
        only when the seed, the built state and the reference calls are all the same as
        when it was made (so an env whose build is not a function of the seed is replayed
        afresh, as before); the last :data:`TARGET_CACHE_SIZE` entries are kept.
        """
        key = self._te_episode_key(seed)
        try:
            cache = self._te_target_cache
        except AttributeError:  # a subclass __init__ that skipped ours
            cache = self._te_target_cache = {}
        if key is not None and key in cache:
            return cache[key]
        targets = self._te_replay_targets(seed)
        if key is not None:
            if len(cache) >= TARGET_CACHE_SIZE:
                del cache[next(iter(cache))]  # the oldest entry
            cache[key] = targets
        return targets

    def _te_episode_key(self, seed: int) -> tuple[int, str, str] | None:
        """What the targets are a function of: seed, built state, reference calls (as
        text); ``None`` when the calls have no faithful text form."""
        try:
            calls = repr([t.calls for t in self.turns])
        except Exception:  # a reference call whose repr fails: replay every time
            return None
        if " at 0x" in calls:  # default object reprs name addresses, not values
            return None
        return (seed, self._te_built_state, calls)

    def _te_replay_targets(self, seed: int) -> list[dict[str, Any]]:
        """Replay the reference calls on a fresh instance; the state after each turn.

        Reference calls almost never fail, so the first pass runs them without the
        per-call state snapshot. If any call does not succeed, that pass is thrown away
        and the replay starts again on another fresh instance with snapshots, which is
        the exact procedure; for an env whose build is a function of the seed (the
        contract of ``reset``) the targets and errors are the same either way.
        """
        targets = self._te_replay(seed, rollback=False)
        if targets is None:
            targets = self._te_replay(seed, rollback=True)
        return cast("list[dict[str, Any]]", targets)  # with rollback it never gives None

    def _te_replay(self, seed: int, *, rollback: bool) -> list[dict[str, Any]] | None:
        """The replay proper; ``None`` when ``rollback`` is off and a call did not succeed."""
        twin = type(self)()
        twin._te_start(seed)
        targets = []
        for k, turn in enumerate(twin.turns):
            for raw in turn.calls:
                c = as_call(raw)
                outcome = twin._te_dispatch(c, rollback=rollback)
                if outcome.kind != "ok" and not rollback:
                    return None
                if outcome.kind in ("bad_call", "internal"):
                    raise ToolEnvError(
                        f"{type(self).__name__}: reference call {c.name}({c.arguments}) of turn {k} failed: {outcome.text}"
                    )
            state = twin._te_comparable(twin.state)
            if turn.check is not None and not twin._te_predicate(turn):
                raise ToolEnvError(f"{type(self).__name__}: the reference calls of turn {k} fail the turn's check")
            targets.append(state)
        return targets
