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

import json

from ..codes import Reason, Stage
from ..context import Run
from ..leakage import answer_candidates, leaked_payloads, named_actions, shown_answer, tokens
from ..probes import MAGIC, first_actions, garbage, mixed_sequence, solution_firsts
from ..runner import Instance, Rejection, Step
from .determinism import first_difference, trajectory

#: Steps of a repeated-action episode (enough to reveal reward for repetition).
_REPEAT_STEPS = 10
#: Seeds the answer-leak, seed-sensitivity and constant-policy checks look at: the
#: configured ones, then the next integers up to this many (one fixed answer wins one
#: game in this many by chance, a listed answer sits in one place in this many).
JUDGING_SEEDS = 6
#: Garbage actions played in a row after reset, whose observations must not show the answer.
_LEAK_STEPS = 3
#: Further seeds on which a shown answer must show again before it is reported.
_LEAK_CONFIRM_SEEDS = 10
#: A constant action whose mean return over the judging seeds reaches this share of the
#: full reward makes the environment gameable (measured on the seed pools: docs/validation.md).
CONSTANT_SHARE = 0.75
#: A garbage action whose rewards, summed over an episode of ``max_turns`` steps, reach
#: this share of the full reward makes the environment gameable.
GARBAGE_SHARE = 0.25


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

    seeds = judging_seeds(run)
    _answer_shown(run, env, seeds)
    _seed_ignored(run, env, seeds)
    _gameable(run, env, seeds, episodes)

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


def judging_seeds(run: Run) -> list[int]:
    """The configured seeds, then the next integers, :data:`JUDGING_SEEDS` in all."""
    seeds = list(dict.fromkeys(run.config.seeds))
    nxt = max(seeds) + 1
    while len(seeds) < JUDGING_SEEDS:
        if nxt not in seeds:
            seeds.append(nxt)
        nxt += 1
    return seeds


def _answer_shown(run: Run, env: Instance, seeds: list[int]) -> None:
    """``answer_leak``: an observation shows the solution's answer before the agent has
    sent it (:func:`..leakage.shown_answer` states where), on every judging seed with a
    replayable solution, and then on :data:`_LEAK_CONFIRM_SEEDS` further seeds (chance must
    not make an example that is sometimes the answer look like one that always is); and
    copying it wins: the solution's actions the shown text names, sent right there, win on
    every judging seed (a goal the task states, such as the item to craft, is named by
    the solution's last action too, but sending that action alone does not win)."""
    neutral = garbage(run)[:_LEAK_STEPS]
    texts, answers, sent = _leak_views(run, env, seeds, neutral)
    hit = shown_answer(texts, answers, sent)
    if hit is None:
        return
    slot, left, shown = hit
    more = [max(seeds) + 1 + i for i in range(_LEAK_CONFIRM_SEEDS)]
    if shown_answer(*_leak_views(run, env, more, neutral), only=(slot, left)) is None:
        return
    full = run.full_reward_threshold()
    copied: dict[int, list[str]] = {}
    for sd, tokens_shown in shown.items():
        copy = named_actions(run.solution_plans(sd)[0], tokens_shown)
        played = env.play(sd, neutral[:slot] + copy) if copy else []
        if not any(s.terminated and s.reward >= full for s in played[slot:]):
            return
        copied[sd] = copy
    sd = min(shown)
    where = "the reset observation" if slot == 0 else f"the observation after garbage action {slot}"
    raise Rejection(
        Reason.answer_leak,
        f"{where} of seed {sd} shows the solution's answer {' '.join(shown[sd])!r} before the agent has sent "
        f"it, after {' '.join(left)!r}, as it shows every seed's own answer there; sending what it names wins "
        "at once: the agent can copy it",
        actions=neutral[:slot] + copied[sd],
        seed=sd,
        details={"observation": texts[sd][slot][:400], "answer": " ".join(shown[sd])},
    )


def _leak_views(run: Run, env: Instance, seeds: list[int], neutral: list[str]) -> tuple[
        dict[int, list[str]], dict[int, list[list[str]]], dict[int, list[set[str]]]]:
    """Per seed with a replayable solution: the observations before the agent acted
    (reset, then each garbage action while the episode runs), the answer runs, and the
    tokens the agent had sent by each."""
    texts: dict[int, list[str]] = {}
    answers: dict[int, list[list[str]]] = {}
    sent: dict[int, list[set[str]]] = {}
    for sd in seeds:
        plans = run.solution_plans(sd)
        if not plans:
            continue
        answers[sd] = answer_candidates(plans[0])
        first, _ = env.reset(sd)
        texts[sd], sent[sd] = [first], [set()]
        so_far: set[str] = set()
        for action, step in zip(neutral, env.play(sd, neutral), strict=False):
            so_far |= set(tokens(action))
            if step.done:
                break
            texts[sd].append(step.observation)
            sent[sd].append(set(so_far))
    return texts, answers, sent


def _seed_ignored(run: Run, env: Instance, seeds: list[int]) -> None:
    """``ignores_seed``: every judging seed gives the same reset observation, the same
    ``solution()`` and the same trajectory along the same actions, unless the metadata
    declares a fixed instance."""
    if run.candidate.fixed_instance or run.candidate.nondeterministic:
        return
    resets = {env.reset(sd)[0] for sd in seeds}
    solutions = {json.dumps(run.solution(sd), sort_keys=True, default=str) for sd in seeds}
    if len(resets) > 1 or len(solutions) > 1:
        return
    actions = mixed_sequence(run, seeds[0], min(run.candidate.max_turns, 12))
    first = trajectory(env, seeds[0], actions, with_solution=False)
    for sd in seeds[1:]:
        if first_difference(first, trajectory(env, sd, actions, with_solution=False)) is not None:
            return
    raise Rejection(
        Reason.ignores_seed,
        f"seeds {seeds} all give the same game (the same reset observation, solution() and answers to "
        f"{len(actions)} actions): reset(seed) does not use its seed. Declare fixed_instance = true in the "
        "metadata if one fixed game is intended",
        actions=actions,
        seed=seeds[1],
    )


def _gameable(run: Run, env: Instance, seeds: list[int], episodes: dict[str, list[Step]]) -> None:
    """``gameable``: a policy that ignores the game earns a large share of what solving it
    earns. A garbage action repeated for ``max_turns`` steps must not sum to
    :data:`GARBAGE_SHARE` of the full reward (whoever sums rewards would be paid for
    noise); one action repeated, whatever it is, must not reach a mean return (the last
    reward when the episode terminated, else 0) of :data:`CONSTANT_SHARE` of the full
    reward over the judging seeds."""
    lo = run.candidate.reward_range[0]
    full = run.candidate.full_reward
    cap = run.candidate.max_turns
    for g in garbage(run):
        played = env.play(run.config.seed, [g] * cap)
        total = sum(s.reward for s in played)
        if total >= lo + GARBAGE_SHARE * (full - lo) and total > 0:
            raise Rejection(
                Reason.gameable,
                f"repeating the garbage action {g!r} for {len(played)} steps earns {total:g} in all, at least "
                f"{GARBAGE_SHARE:g} of the full reward {full:g}: noise is paid",
                actions=[g] * len(played),
                seed=run.config.seed,
                details={"rewards": [s.reward for s in played]},
            )
    # every probe, and each action of the solutions (the final answer of one seed, repeated)
    for action in dict.fromkeys([*episodes, *sorted(run.solution_actions())]):
        first = env.play(run.config.seed, [action] * cap)
        if _return(first) <= 0:
            continue
        returns = [_return(first)] + [_return(env.play(sd, [action] * cap)) for sd in seeds[1:]]
        mean = sum(returns) / len(returns)
        if full > 0 and mean >= CONSTANT_SHARE * full:
            raise Rejection(
                Reason.gameable,
                f"repeating {action!r} whatever happens earns a mean return of {mean:.2f} over seeds {seeds} "
                f"(full reward {full:g}): a constant policy solves it, there is nothing to learn",
                actions=[action] * len(first),
                seed=run.config.seed,
                details={"returns": returns},
            )


def _return(steps: list[Step]) -> float:
    """The episode's return in the environment's own units: its last reward when it
    ended the episode itself, else 0 (a cut episode earns nothing)."""
    last = steps[-1]
    return last.reward if last.terminated else 0.0
