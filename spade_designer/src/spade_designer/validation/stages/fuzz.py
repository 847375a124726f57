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

import re
import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from ..codes import Reason
from ..context import Run
from ..mutations import derived_actions, mutations, templates
from ..probes import COMMANDS
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
#: Domain samples whose near misses join the derived actions.
_DOMAIN_SEEDS = 8
#: Winning episodes kept from a fuzz run (proof of feasibility without ``solution()``).
_MAX_WINS = 4
#: Printed commands each played alone for a long episode.
_PRINTED_REPEATS = 4


@dataclass
class FuzzOutcome:
    examples: int = 0
    steps: int = 0
    failures: list[Rejection] = field(default_factory=list)
    first_failure_at: float | None = None
    stopped: bool = False
    sent: dict[str, None] = field(default_factory=dict)
    #: The domain strategy's samples this run drew.
    domain: tuple[str, ...] = ()
    #: The commands the environment printed (its templates, placeholders filled).
    templates: tuple[str, ...] = ()
    #: Reward at which a terminating step is a win (``Run.full_reward_threshold``).
    full: float = float("inf")
    #: Winning episodes seen, ``(seed, actions up to the win)`` (a few are enough).
    wins: list[tuple[int, list[str]]] = field(default_factory=list)

    def saw(self, seed: int, actions: list[str], steps: list[Any]) -> None:
        """Count ``steps`` and keep the episode if it ended in a win."""
        self.steps += len(steps)
        if steps and steps[-1].terminated and steps[-1].reward >= self.full and len(self.wins) < _MAX_WINS:
            self.wins.append((seed, list(actions[: len(steps)])))


def episode(env: Instance, seed: int, actions: list[str], max_turns: int, outcome: FuzzOutcome) -> None:
    """Play one episode; raise :class:`Rejection` on the first broken invariant."""
    for action in actions:
        if len(action) <= _PROBE_CHARS:
            outcome.sent.setdefault(action, None)
    steps = env.play(seed, actions)
    outcome.saw(seed, actions, steps)
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
    count = examples or cfg.fuzz_examples
    decoder = action_program(domain=run.domain, known=known, long_chars=cfg.long_action_chars,
                             domain_count=count, seed=cfg.seed)
    max_steps = max(1, min(cfg.fuzz_max_steps, max_turns + 1))
    min_steps = min(cfg.fuzz_min_steps, max_steps)
    env = run.env()
    outcome = FuzzOutcome(domain=decoder.domain, full=run.full_reward_threshold())
    try:
        # What the environment prints at reset (its intro text and command templates)
        # and in answer to the generic probes seeds the derived actions.
        texts = [env.reset(seed)[0] for seed in cfg.seeds] if cfg.fuzz_from_environment else []
        texts += sweep(run, decoder, outcome)
        if cfg.fuzz_from_environment:
            # near misses of the domain's own actions too, not only of this environment's
            outcome.templates = tuple(templates(texts))
            derived = derived_actions(known + list(decoder.domain[:_DOMAIN_SEEDS]), texts)
            decoder = action_program(
                domain=run.domain, known=known, long_chars=cfg.long_action_chars, derived=derived, plans=plans,
                domain_count=count, seed=cfg.seed,
            )
            _sweep_list(run, derived, outcome)
            for seed, actions in prefix_episodes(plans, max(1, min(cfg.fuzz_max_steps, max_turns))):
                _play_probe(run, seed, actions, outcome)
    except Rejection as rej:
        if _confirmed(env, rej, max_turns):
            outcome.failures.append(rej)
            return outcome

    @settings(
        max_examples=count,
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
        outcome.saw(seed, actions, played)
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


def action_classes(run: Run, domain: tuple[str, ...] = (), printed: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """The actions of the long episodes, by class: *valid* (well-formed wrong moves: the
    solution's moves with other numbers and its moves but the last, else the commands the
    environment printed, else generic commands), *repeated* (the first valid one, again
    and again), *command N* (each command the environment printed, repeated: one that
    never ends the game, such as a measurement, shows a missing turn cap), *domain* (the
    domain strategy's own) and *malformed* (garbage)."""
    from ..probes import garbage

    own = run.config.fuzz_from_environment  # moves derived from the environment itself
    plans = [p for seed in run.config.seeds for p in run.solution_plans(seed)[:1] if p] if own else []
    printed = printed if own else ()
    solution = {a for p in plans for a in p}
    # the solution's own moves with other numbers (a wrong guess is still a guess), then
    # its moves but the last (walking about without finishing)
    valid = [m for p in plans[:1] for a in p for m in mutations(a)[:12] if _same_shape(m, a) and m not in solution]
    valid += [a for p in plans[:1] for a in p[:-1] if a not in valid]
    valid = valid or [a for a in run.fuzz_actions if a.startswith("\\boxed{") and a not in solution]
    valid = valid or [c for c in COMMANDS if c not in solution]
    out = {"valid": valid[:8], "repeated": valid[:1], "malformed": garbage(run)}
    played = [c for c in printed if c not in solution and not _asks_for_information(c)]
    for i, command in enumerate(played[:_PRINTED_REPEATS]):
        out[f"command {i + 1}"] = [command]
    if domain:
        out["domain"] = [a for a in domain if a not in solution][:16]
    return {k: v for k, v in out.items() if v}


_DIGITS = re.compile(r"[0-9]+")
#: Commands that only ask (an environment may answer them without spending a turn; the
#: harness's cap ends an episode of them): not played alone for a long episode.
_INFORMATION = frozenset({"look", "help", "hint", "status", "inventory", "inv", "map", "rules", "info", "score"})


def _asks_for_information(action: str) -> bool:
    words = re.findall(r"[a-z]+", action.lower().replace("\\boxed", " "))
    return bool(words) and words[0] in _INFORMATION


def _same_shape(mutant: str, action: str) -> bool:
    """Whether ``mutant`` is ``action`` with only its ASCII numbers changed."""
    return mutant != action and _DIGITS.sub("0", mutant) == _DIGITS.sub("0", action) and mutant.isascii()


def long_episodes(run: Run, domain: tuple[str, ...] = (), printed: tuple[str, ...] = ()) -> int:
    """Episodes longer than ``max_turns``, one per action class (:func:`action_classes`):
    every call is checked as in any episode (no crash late in the episode, rewards in
    range). Well-formed actions must be ended by the environment within ``max_turns``
    (``exceeds_max_turns``); garbage is played ``max_turns`` times only, since an
    environment may answer malformed text without spending a turn (the harness's cap
    ends such an episode where the environment does not)."""
    env = run.env()
    cap = run.candidate.max_turns
    steps = 0
    # two seeds: a game's size (and so how long its episodes run) may depend on the seed
    seeds = list(dict.fromkeys([run.config.seed, *run.config.seeds]))[:2]
    for klass, actions in action_classes(run, domain, printed).items():
        n = cap if klass == "malformed" else cap + 1
        episode_actions = [actions[i % len(actions)] for i in range(n)]
        for seed in seeds:
            outcome = FuzzOutcome()
            try:
                if klass == "malformed":
                    outcome.saw(seed, episode_actions, env.play(seed, episode_actions))
                else:
                    episode(env, seed, episode_actions, cap, outcome)
            except Rejection as rej:
                rej.details.setdefault("action_class", klass)
                raise
            steps += outcome.steps
    return steps


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
    run.found_wins = outcome.wins
    if outcome.failures:
        best = min(outcome.failures, key=_size)
        best = minimize(run.env(), best, run.candidate.max_turns, run.config.shrink_budget_s)
        best.details.setdefault("examples", outcome.examples)
        raise best
    steps = long_episodes(run, outcome.domain, outcome.templates)
    run.fuzz_steps += steps
    return f"{outcome.examples} examples, {outcome.steps + steps} steps: every invariant held"
