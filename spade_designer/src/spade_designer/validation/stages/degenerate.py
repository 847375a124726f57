"""Stage 7, degenerate checks: environments that are valid code but bad training tasks.

In order, each on the configured seed with fixed probes (:mod:`..probes`):

* ``solved_at_reset`` — every probe's first action wins: there is nothing to do;
* ``single_shot`` — every probe ends the episode on its first action: not multi-turn;
* ``not_interactive`` — every probe's first action gets the same observation, the
  solution's first action included (only judged when a replayable solution is known);
* ``rewards_garbage`` — an episode of garbage earns at least ``garbage_reward_fraction``;
* ``reward_hacking`` — claiming success ("solve", "win", ...) or repeating one command
  that is not part of the solution reaches full reward, on every seed;
* ``unseeded_randomness`` — a fresh instance (another worker) replays each configured seed and
  actions differently: randomness not drawn from the seed;
* ``hint_leakage`` — the hint contains the solution (:mod:`..leakage`).
"""

from __future__ import annotations

from ..codes import Reason, Stage
from ..context import Run
from ..leakage import leaked_payloads
from ..probes import MAGIC, first_actions, garbage, mixed_sequence, solution_firsts
from ..runner import Instance, Rejection
from .determinism import first_difference, trajectory

#: Steps of a repeated-action episode (enough to reveal reward for repetition).
_REPEAT_STEPS = 10


def _repeat(env: Instance, seed: int, action: str, steps: int) -> tuple[float, list[str]]:
    played = env.play(seed, [action] * steps)
    return max(s.reward for s in played), [action] * len(played)


def check(run: Run) -> str:
    seed = run.config.seed
    env = run.env()
    full = run.full_reward_threshold()
    lo, hi = run.candidate.reward_range
    probes = first_actions(run, seed) + [m for m in MAGIC if m not in run.solution_actions()]
    # Actions known to be well-formed: what the solution spells out (its list, or the
    # commands read from its string). Generic probes may all be malformed for this format.
    known = solution_firsts(run, seed)
    steps = min(run.candidate.max_turns, _REPEAT_STEPS)
    # Every probe is played as a repeated-action episode (one batched message); its first
    # step answers the first-step questions, the whole episode the repetition ones.
    episodes = {p: env.play(seed, [p] * steps) for p in probes}
    firsts = [episodes[p][0] for p in probes]
    if all(s.terminated and s.reward >= full for s in firsts):
        raise Rejection(
            Reason.solved_at_reset,
            f"all {len(probes)} probe actions win on the first step: the task is solved at reset",
            actions=[probes[-1]],
            seed=seed,
        )
    # Judged only when a well-formed action ends the episode too: probes that are all
    # malformed for this environment say nothing about multi-turn play (an environment may
    # end on a malformed action and still take several well-formed ones).
    if all(s.done for s in firsts):
        if known:
            raise Rejection(
                Reason.single_shot,
                f"all {len(probes)} probe actions, the solution's first action {known[0]!r} among them, "
                "end the episode on the first step: not multi-turn",
                actions=[known[0]],
                seed=seed,
            )
        run.note(Stage.degenerate, "single-shot not judged: every probe ends the episode, but no well-formed "
                 "action is known (no solution() to read one from)")
    # The agent reads observations, not rewards: if the solution's first action gets the
    # same observation as every other probe, the text does not depend on the action (even
    # where the reward does). Judged only with a well-formed action among the probes:
    # without one, "every probe is refused the same way" is what a good environment does too.
    if known and len({s.observation for s in firsts}) == 1:
        raise Rejection(
            Reason.not_interactive,
            f"all {len(probes)} probe actions, the solution's first action {known[0]!r} among them, get the same "
            "observation: the text the agent reads does not depend on its action",
            actions=[known[0]],
            seed=seed,
            details={"observation": firsts[0].observation[:300]},
        )

    garbage_bar = lo + run.config.garbage_reward_fraction * (hi - lo)
    for g in garbage(run):
        played = episodes.get(g) or env.play(seed, [g] * steps)
        best = max(s.reward for s in played)
        if best >= garbage_bar:
            raise Rejection(
                Reason.rewards_garbage,
                f"garbage action {g!r} earns reward {best} (bar {garbage_bar})",
                actions=[g] * len(played),
                seed=seed,
            )

    # A hack wins whatever the hidden state: confirmed on every seed, so a legitimate
    # move that happens to win one puzzle is not mistaken for one.
    for m in MAGIC:
        if m not in episodes or episodes[m][0].reward < full:
            continue
        if all(_repeat(env, sd, m, 1)[0] >= full for sd in run.config.seeds if sd != seed):
            raise Rejection(
                Reason.reward_hacking,
                f"claiming success with {m!r} earns full reward on every seed",
                actions=[m],
                seed=seed,
            )
    solution_actions = run.solution_actions()
    not_garbage = set(garbage(run))
    for a in probes:
        if a in solution_actions or a in not_garbage:
            continue
        played = episodes[a]
        best = max(s.reward for s in played)
        if best >= full and all(_repeat(env, sd, a, steps)[0] >= full for sd in run.config.seeds if sd != seed):
            raise Rejection(
                Reason.reward_hacking,
                f"repeating {a!r} {len(played)} time(s) earns full reward on every seed without following the solution",
                actions=[a] * len(played),
                seed=seed,
            )

    if not run.candidate.nondeterministic:
        # Every configured seed, not one: a per-instance draw that only picks among a few
        # hidden values (a secret of 1-50) replays one seed alike by chance (about 1 in 50).
        other = run.new_instance()
        try:
            for sd in dict.fromkeys([seed, *run.config.seeds]):
                actions = mixed_sequence(run, sd, min(run.candidate.max_turns, 12))
                diff = first_difference(trajectory(env, sd, actions), trajectory(other, sd, actions))
                if diff is not None:
                    raise Rejection(
                        Reason.unseeded_randomness,
                        f"a fresh instance replays seed {sd} differently (first at "
                        f"{'the reset observation' if diff == 0 else f'step {diff}'}): randomness not drawn from the seed",
                        actions=actions[:diff],
                        seed=sd,
                    )
        finally:
            other.close()

    hint = run.candidate.hint
    if hint:
        for sd in run.config.seeds:
            sol = run.solution(sd)
            if sol is None:
                continue
            leaked = leaked_payloads(hint, sol)
            if leaked is not None:
                raise Rejection(
                    Reason.hint_leakage,
                    f"the hint reveals the solution of seed {sd}: {', '.join(repr(p) for p in leaked)}",
                    seed=sd,
                )
    return f"{len(probes)} probes: interactive, multi-turn, no reward for garbage or claimed success"
