"""Stage 5, fuzz: property-based episodes with Hypothesis.

First a deterministic sweep plays every fixed probe (generic pool, domain samples, known
actions) at least once; then each Hypothesis example is ``reset(seed)`` followed by a list
of actions decoded from its bytes (see :mod:`..strategies`). Invariants, checked on every call by
:class:`~..runner.Instance`: no exception escapes ``step``, types hold, the reward is
finite and inside the declared range, observations stay under the size bound, every call
stays under the time bound; and per episode: it ends within ``max_turns``.

A failing example is shrunk by Hypothesis; the smallest failure seen within the shrink
budget is reported as a replayable ``(seed, actions)`` pair. A slow call is only reported
if replaying the same example is slow again (the machine may be busy). After a slow call
or a failure that kills the worker (timeout, crash), fuzzing stops without shrinking:
every replay would cost that time again; the actions up to the failing call are reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from ..codes import Reason
from ..context import Run
from ..mutations import derived_actions, mutations
from ..probes import COMMANDS, GARBAGE
from ..runner import FATAL, Instance, Rejection
from ..strategies import ActionProgram
from ..strategies import program as action_program

#: Longest action remembered as a probe for later stages.
_PROBE_CHARS = 200
#: How many times the sweep plays a chunk again after an unconfirmed slow call: the sweep
#: must not skip the rest of its probes because the machine was busy for a moment.
_SWEEP_RETRIES = 3
#: Observations kept (and characters of each) to harvest command templates from.
_MAX_TEXTS = 16
_TEXT_CHARS = 4_000


@dataclass
class FuzzOutcome:
    examples: int = 0
    steps: int = 0
    failures: list[Rejection] = field(default_factory=list)
    first_failure_at: float | None = None
    stopped: bool = False
    sent: dict[str, None] = field(default_factory=dict)


def episode(env: Instance, seed: int, actions: list[str], max_turns: int, outcome: FuzzOutcome) -> None:
    """Play one episode; raise :class:`Rejection` on the first broken invariant."""
    for action in actions:
        if len(action) <= _PROBE_CHARS:
            outcome.sent.setdefault(action, None)
    steps = env.play(seed, actions)
    outcome.steps += len(steps)
    if len(steps) > max_turns or (len(steps) == max_turns and not steps[-1].done):
        raise Rejection(
            Reason.exceeds_max_turns,
            f"episode still running after {max_turns} steps (max_turns)",
            actions=list(actions[:max_turns]),
            seed=seed,
        )


def _confirmed(env: Instance, rej: Rejection, max_turns: int, replays: int = 2) -> bool:
    """Replay a slow example: only a call that is slow every time is a finding.

    A rejection already confirmed (by :meth:`Instance.play`'s own replays or an earlier
    call here; ``details["replays"]``) is not replayed again.
    """
    if rej.code is not Reason.slow_call or rej.seed is None or rej.details.get("replays"):
        return True
    for _ in range(replays):
        try:
            env.reset(rej.seed)
            env._play_sequential(list(rej.actions or []))
        except Rejection as again:
            if again.code is not Reason.slow_call:
                return False
        else:
            return False
    rej.details["replays"] = replays + 1
    return True


def minimize(env: Instance, rej: Rejection, max_turns: int, budget_s: float) -> Rejection:
    """Greedy deletion of actions while the same failure (reason code) reproduces.

    Hypothesis shrinks the bytes an example was decoded from, which does not always map
    to fewer actions; this pass finishes the job on the action list itself (each trial is
    one replayed episode) and stops at a local minimum or when the budget runs out.
    """
    if rej.seed is None or not rej.actions or rej.code in FATAL or rej.code is Reason.slow_call:
        return rej
    deadline = time.perf_counter() + budget_s
    best = rej
    changed = True
    while changed and len(best.actions or []) > 1 and time.perf_counter() < deadline:
        changed = False
        acts = list(best.actions or [])
        for i in range(len(acts)):
            trial = acts[:i] + acts[i + 1 :]
            try:
                episode(env, best.seed or 0, trial, max_turns, FuzzOutcome())
            except Rejection as again:
                if again.code is best.code and again.actions is not None and len(again.actions) < len(acts):
                    best = again
                    changed = True
                    break
                if again.code in FATAL:
                    return best
            if time.perf_counter() > deadline:
                break
    return best


def _size(rej: Rejection) -> tuple[int, int]:
    acts = rej.actions or []
    return len(acts), sum(len(a) for a in acts)


def fuzz_run(run: Run, *, examples: int | None = None) -> FuzzOutcome:
    cfg = run.config
    cand = run.candidate
    max_turns = cand.max_turns
    known: list[str] = []
    plans: list[tuple[int, list[str]]] = []
    for seed in cfg.seeds:
        for plan in run.solution_plans(seed)[:1]:
            known += plan
            plans.append((seed, plan))
    decoder = action_program(domain=run.domain, known=known, long_chars=cfg.long_action_chars)
    max_steps = max(1, min(cfg.fuzz_max_steps, max_turns + 1))
    min_steps = min(cfg.fuzz_min_steps, max_steps)
    env = run.env()
    outcome = FuzzOutcome()
    try:
        # What the environment prints at reset (its intro text and command templates)
        # and in answer to the generic probes seeds the derived actions.
        texts = [env.reset(seed)[0] for seed in cfg.seeds] if cfg.fuzz_from_environment else []
        texts += sweep(run, decoder, outcome)
        if cfg.fuzz_from_environment:
            derived = derived_actions(known, texts)
            decoder = action_program(
                domain=run.domain, known=known, long_chars=cfg.long_action_chars, derived=derived, plans=plans
            )
            _sweep_list(run, derived, outcome)
            for seed, actions in prefix_episodes(plans, max(1, min(cfg.fuzz_max_steps, max_turns))):
                _play_probe(run, seed, actions, outcome)
    except Rejection as rej:
        if _confirmed(env, rej, max_turns):
            outcome.failures.append(rej)
            return outcome

    @settings(
        max_examples=examples or cfg.fuzz_examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        verbosity=Verbosity.quiet,
    )
    # A fixed seed (not ``derandomize``, which seeds from a hash of this function's source:
    # examples would change with every edit of this file, and the hash costs a tokenize
    # of the source on every run).
    @hypothesis_seed(cfg.seed)
    @given(
        seed=st.sampled_from(cfg.seeds),
        data=st.binary(min_size=3 * min_steps, max_size=5 * max_steps),
    )
    def prop(seed: int, data: bytes) -> None:
        if outcome.stopped:
            return
        acts = decoder.decode(data, max_steps, seed)
        outcome.examples += 1
        try:
            episode(env, seed, acts, max_turns, outcome)
        except Rejection as rej:
            if not _confirmed(env, rej, max_turns):
                return
            outcome.failures.append(rej)
            now = time.perf_counter()
            if outcome.first_failure_at is None:
                outcome.first_failure_at = now
            # Shrinking replays the example many times: not worth it when every replay
            # costs a killed worker or a slow call.
            if rej.code in FATAL or rej.code is Reason.slow_call or now - outcome.first_failure_at > cfg.shrink_budget_s:
                outcome.stopped = True
            raise

    # The example database is off, but Hypothesis still derives its key from a hash of
    # the test's source (a tokenize of this function) unless the key is set: about 5 ms
    # of every validation's CPU.
    prop._hypothesis_internal_database_key = None  # type: ignore[attr-defined]
    try:
        prop()
    except (Rejection, HypothesisException):
        # The recorded failures are authoritative: Hypothesis may complain (flaky) once
        # shrinking is cut short by the budget.
        if not outcome.failures:
            raise
    return outcome


def sweep(run: Run, program: ActionProgram, outcome: FuzzOutcome) -> list[str]:
    """Every fixed probe (generic pool, domain samples, known actions) at least once, in
    episodes of up to ``fuzz_max_steps``: random exploration alone may miss one of ~200.
    Returns the distinct observations that name a boxed command (templates to derive from)."""
    return _sweep_list(run, list(dict.fromkeys(program.pool + program.domain + program.known)), outcome)


def _sweep_list(run: Run, actions: list[str], outcome: FuzzOutcome) -> list[str]:
    max_steps = max(1, min(run.config.fuzz_max_steps, run.candidate.max_turns))
    remaining = list(actions)
    seeds = run.config.seeds
    texts: dict[str, None] = {}
    n = 0
    while remaining:
        chunk = remaining[:max_steps]
        played = _play_probe(run, seeds[n % len(seeds)], chunk, outcome)
        n += 1
        for step in played:
            if len(texts) < _MAX_TEXTS and "\\boxed{" in step.observation:
                texts.setdefault(step.observation[:_TEXT_CHARS], None)
        remaining = remaining[max(1, len(played)) :]
    return list(texts)


def _play_probe(run: Run, seed: int, actions: list[str], outcome: FuzzOutcome) -> list[Any]:
    """One probe episode; a late answer the replays do not confirm is played again (up to
    :data:`_SWEEP_RETRIES` times), any other broken invariant is raised."""
    env = run.env()
    late = 0
    while True:
        try:
            played = env.play(seed, actions)
        except Rejection as rej:
            if rej.actions is None:
                rej.actions = list(env.trail)
            if late < _SWEEP_RETRIES and not _confirmed(env, rej, run.candidate.max_turns):
                late += 1  # a late answer the replays did not confirm: play this chunk again
                continue
            raise
        outcome.steps += len(played)
        return played


def prefix_episodes(plans: list[tuple[int, list[str]]], max_steps: int) -> list[tuple[int, list[str]]]:
    """Episodes that follow the solution for ``k`` steps and then try near misses of its
    next action (the first of them from exactly the state the solution reached), and one
    that plays every solution action twice: bugs that only a player deep in the game
    meets (overshooting the goal, an index past the board's end)."""
    out: list[tuple[int, list[str]]] = []
    for seed, plan in plans:
        n = len(plan)
        ks = sorted({0, 1, n // 2, n - 2, n - 1} & set(range(n))) if n > 5 else list(range(n))
        for k in ks:
            if k >= max_steps:
                continue
            muts = mutations(plan[k])
            if muts:
                out.append((seed, plan[:k] + muts[: max_steps - k]))
        doubled = [a for a in plan for _ in range(2)][:max_steps]
        out.append((seed, doubled))
    return out


def long_episode(run: Run) -> int:
    """One full-length episode of short probe actions: it must end within ``max_turns``."""
    env = run.env()
    cycle = list(COMMANDS) + list(GARBAGE)
    acts = [cycle[i % len(cycle)] for i in range(run.candidate.max_turns + 1)]
    outcome = FuzzOutcome()
    episode(env, run.config.seed, acts, run.candidate.max_turns, outcome)
    return outcome.steps


def check(run: Run, *, examples: int | None = None) -> str:
    env = run.env()
    env.enforce_time_bound = True
    try:
        return _check(run, examples=examples)
    finally:
        env.enforce_time_bound = False


def _check(run: Run, *, examples: int | None = None) -> str:
    outcome = fuzz_run(run, examples=examples)
    run.fuzz_actions = list(outcome.sent)
    run.fuzz_steps = outcome.steps
    if outcome.failures:
        best = min(outcome.failures, key=_size)
        best = minimize(run.env(), best, run.candidate.max_turns, run.config.shrink_budget_s)
        best.details.setdefault("examples", outcome.examples)
        raise best
    steps = long_episode(run)
    run.fuzz_steps += steps
    return f"{outcome.examples} examples, {outcome.steps + steps} steps: every invariant held"
