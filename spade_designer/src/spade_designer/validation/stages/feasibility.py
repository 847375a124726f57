"""Stage 6, feasibility: replaying ``solution()`` from ``reset(seed)`` reaches full reward.

For every configured seed: ``reset(seed)``, ask ``solution()``, ``reset(seed)`` again and
replay the actions. Full reward (the top of the reward range, within
``full_reward_fraction``) must be reached before the list runs out or the episode ends.

When ``solution()`` is missing or returns a string (an answer that cannot be replayed),
the candidate still passes, marked *feasibility unproven*: the trainer must establish
solvability with hinted plays before trusting the environment's regret.
"""

from __future__ import annotations

from ..codes import Reason, Stage
from ..context import Run
from ..runner import Rejection


def check(run: Run) -> str:
    env = run.env()
    threshold = run.full_reward_threshold()
    kinds = set()
    proven = 0
    for seed in run.config.seeds:
        error = run.solution_error(seed)
        if error is not None:
            raise error
        sol = run.solution(seed)
        if not isinstance(sol, list):
            kinds.add("missing" if sol is None else "string")
            continue
        if not sol:
            raise Rejection(Reason.solution_invalid, "solution() returned an empty action list", seed=seed)
        env.reset(seed)
        best = float("-inf")
        for i, action in enumerate(sol):
            step = env.step(action)
            best = max(best, step.reward)
            if step.reward >= threshold:
                break
            if step.done:
                raise Rejection(
                    Reason.solution_fails,
                    f"replaying solution() on seed {seed} ended the episode at step {i + 1} with reward {step.reward}",
                    actions=list(sol[: i + 1]),
                    seed=seed,
                )
        else:
            raise Rejection(
                Reason.solution_fails,
                f"replaying the {len(sol)} actions of solution() on seed {seed} reached reward {best}, "
                f"not full reward {run.candidate.full_reward}",
                actions=list(sol),
                seed=seed,
            )
        proven += 1
    if kinds:
        if proven:
            raise Rejection(
                Reason.solution_invalid,
                f"solution() is a replayable list on {proven} seed(s) but not on the others",
            )
        run.feasibility_proven = False
        why = "solution() is not provided" if kinds == {"missing"} else "solution() is not a replayable action list"
        run.note(Stage.feasibility, f"feasibility unproven: {why}; the trainer must establish it with hinted plays",
                 code=Reason.feasibility_unproven)
        return "unproven"
    run.feasibility_proven = True
    return f"solution() reaches full reward on seeds {list(run.config.seeds)}"
