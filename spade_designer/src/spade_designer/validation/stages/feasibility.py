r"""Stage 6, feasibility: replaying ``solution()`` from ``reset(seed)`` reaches full reward.

For every configured seed: ``reset(seed)``, ask ``solution()``, ``reset(seed)`` again and
replay the actions. Full reward (the top of the reward range, within
``full_reward_fraction``) must be reached before the actions run out or the episode ends.

The actions are the list ``solution()`` returns, or those a string solution spells out in
the domain's format (the reference implementation's habit: several ``\boxed{...}``
commands, or tool calls per turn; see :mod:`..solutions`). A replay that falls short is a
``solution_fails`` rejection whose finding carries the replay: seed, actions, the reward
after each step and the last observation.

When ``solution()`` is missing or is a string with no action in the format (an answer,
prose), the candidate still passes, marked *feasibility unproven*: the trainer must
establish solvability with hinted plays before trusting the environment's regret.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..codes import Reason, Stage
from ..context import Run
from ..runner import Instance, Rejection

#: Characters of the last observation kept in a failed replay's details.
_OBSERVATION_CHARS = 400


@dataclass
class Replay:
    """One replayed plan: the actions sent, the reward after each, how it ended."""

    actions: list[str]
    rewards: list[float] = field(default_factory=list)
    last_observation: str = ""
    ended: bool = False
    reached: bool = False

    @property
    def best(self) -> float:
        return max(self.rewards, default=float("-inf"))

    def details(self) -> dict[str, object]:
        return {"rewards": self.rewards, "last_observation": self.last_observation[:_OBSERVATION_CHARS]}


def replay(env: Instance, seed: int, plan: list[str], threshold: float) -> Replay:
    """Play ``plan`` from ``reset(seed)`` until full reward, the end of the episode, or the
    end of the plan."""
    env.reset(seed)
    out = Replay(actions=[])
    for action in plan:
        step = env.step(action)
        out.actions.append(action)
        out.rewards.append(step.reward)
        out.last_observation = step.observation
        if step.reward >= threshold:
            out.reached = True
            break
        if step.done:
            out.ended = True
            break
    return out


def _failure(run: Run, seed: int, rep: Replay, plan: list[str], from_string: bool) -> Rejection:
    source = f"the {len(plan)} actions read from the solution() string" if from_string else f"the {len(plan)} actions of solution()"
    if rep.ended:
        message = (
            f"replaying {source} on seed {seed} ended the episode at step {len(rep.actions)} "
            f"with reward {rep.rewards[-1]}, not full reward {run.candidate.full_reward}"
        )
    else:
        message = f"replaying {source} on seed {seed} reached reward {rep.best}, not full reward {run.candidate.full_reward}"
    return Rejection(Reason.solution_fails, message, actions=list(rep.actions), seed=seed, details=rep.details())


def check(run: Run) -> str:
    env = run.env()
    threshold = run.full_reward_threshold()
    kinds = set()
    proven = 0
    read_from_string = 0
    for seed in run.config.seeds:
        error = run.solution_error(seed)
        if error is not None:
            raise error
        sol = run.solution(seed)
        if isinstance(sol, list) and not sol:
            raise Rejection(Reason.solution_invalid, "solution() returned an empty action list", seed=seed)
        plans = run.solution_plans(seed)
        if not plans:
            kinds.add("missing" if sol is None else "string")
            continue
        from_string = isinstance(sol, str)
        replays = [replay(env, seed, plan, threshold) for plan in plans]
        if not any(r.reached for r in replays):
            i = max(range(len(replays)), key=lambda k: replays[k].best)
            raise _failure(run, seed, replays[i], plans[i], from_string)
        proven += 1
        read_from_string += from_string
    if kinds:
        if proven:
            raise Rejection(
                Reason.solution_invalid,
                f"solution() is a replayable action sequence on {proven} seed(s) but not on the others",
            )
        run.feasibility_proven = False
        why = "solution() is not provided" if kinds == {"missing"} else "solution() holds no action sequence to replay"
        run.note(Stage.feasibility, f"feasibility unproven: {why}; the trainer must establish it with hinted plays",
                 code=Reason.feasibility_unproven)
        return "unproven"
    run.feasibility_proven = True
    how = " (actions read from its string)" if read_from_string else ""
    return f"solution(){how} reaches full reward on seeds {list(run.config.seeds)}"
