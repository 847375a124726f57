r"""Stage 6, feasibility: replaying ``solution()`` from ``reset(seed)`` wins.

For every configured seed: ``reset(seed)``, ask ``solution()``, ``reset(seed)`` again and
replay the actions. The winning path is checked whole: the last action ends the episode
(``terminated``, not a truncation, and not earlier: a win before the solution's last step
means the win condition and the solution disagree) with full reward (the top of the
reward range, within ``full_reward_fraction``), and it is paid once: steps sent after the
end (the winning action again, garbage) pay nothing and keep the episode over
(``step_after_end``). Full reward that never ends the episode is ``win_not_terminated``.

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


#: Actions sent after the solution's last step, to see that the end holds: the winning
#: action again (an environment that forgets it ended pays it twice) and garbage.
AFTER_END_PROBES = ("hello",)


@dataclass
class Replay:
    """One replayed plan: the actions sent, the reward after each, how it ended."""

    threshold: float
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    last_observation: str = ""
    ended: bool = False
    terminated: bool = False
    #: Step (1-based) of the first full reward, if any.
    full_at: int | None = None

    @property
    def best(self) -> float:
        return max(self.rewards, default=float("-inf"))

    @property
    def won(self) -> bool:
        """The replay ended the episode (``terminated``) on full reward."""
        return self.terminated and bool(self.rewards) and self.rewards[-1] >= self.threshold

    def details(self) -> dict[str, object]:
        return {"rewards": self.rewards, "last_observation": self.last_observation[:_OBSERVATION_CHARS]}


def replay(env: Instance, seed: int, plan: list[str], threshold: float) -> Replay:
    """Play the whole ``plan`` from ``reset(seed)``, until the episode ends or the plan
    does; a plan that wins is then probed after its end (:meth:`Instance.after_end`)."""
    env.reset(seed)
    out = Replay(threshold)
    for action in plan:
        step = env.step(action)
        out.actions.append(action)
        out.rewards.append(step.reward)
        out.last_observation = step.observation
        if step.reward >= threshold and out.full_at is None:
            out.full_at = len(out.actions)
        if step.done:
            out.ended = True
            out.terminated = step.terminated
            if out.won and len(out.actions) == len(plan):
                env.after_end([action, *AFTER_END_PROBES], step)
            break
    return out


def _failure(run: Run, seed: int, rep: Replay, plan: list[str], from_string: bool) -> Rejection:
    source = f"the {len(plan)} actions read from the solution() string" if from_string else f"the {len(plan)} actions of solution()"
    full = run.candidate.full_reward
    code = Reason.solution_fails
    n = len(rep.actions)
    if rep.ended and rep.won and n < len(plan):
        message = (f"replaying {source} on seed {seed} won at step {n}, before the solution's last action "
                   f"(step {len(plan)}): the win condition and the solution disagree")
    elif rep.ended and rep.rewards[-1] >= run.full_reward_threshold() and not rep.terminated:
        code = Reason.win_not_terminated
        message = (f"replaying {source} on seed {seed} reached full reward at step {n}, but the episode was "
                   "truncated, not terminated: a win must end the episode with terminated=True")
    elif rep.ended:
        message = f"replaying {source} on seed {seed} ended the episode at step {n} with reward {rep.rewards[-1]}, not full reward {full}"
    elif rep.full_at is not None:
        code = Reason.win_not_terminated
        message = (f"replaying {source} on seed {seed} reached full reward {full} at step {rep.full_at} but never "
                   "ended the episode: a win must end it (terminated=True)")
    else:
        message = f"replaying {source} on seed {seed} reached reward {rep.best}, not full reward {full}"
    return Rejection(code, message, actions=list(rep.actions), seed=seed, details=rep.details())


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
        if not any(r.won and len(r.actions) == len(p) for r, p in zip(replays, plans, strict=True)):
            i = max(range(len(replays)), key=lambda k: (replays[k].won, replays[k].best))
            raise _failure(run, seed, replays[i], plans[i], from_string)
        proven += 1
        read_from_string += from_string
    if kinds:
        if proven:
            raise Rejection(
                Reason.solution_invalid,
                f"solution() is a replayable action sequence on {proven} seed(s) but not on the others",
            )
        found = _found_win(run, env, threshold)
        if found:
            return found
        run.feasibility_proven = False
        why = "solution() is not provided" if kinds == {"missing"} else "solution() holds no action sequence to replay"
        run.note(Stage.feasibility, f"feasibility unproven: {why}; the trainer must establish it with hinted plays",
                 code=Reason.feasibility_unproven)
        return "unproven"
    run.feasibility_proven = True
    how = " (actions read from its string)" if read_from_string else ""
    return f"solution(){how} reaches full reward on seeds {list(run.config.seeds)}"


def _found_win(run: Run, env: Instance, threshold: float) -> str | None:
    """Without a replayable ``solution()``: a win the fuzzer met (:attr:`Run.found_wins`),
    replayed and checked as a solution's would be (it ends the episode on full reward, and
    the end holds), proves feasibility. ``None`` when there is none."""
    for seed, actions in run.found_wins:
        rep = replay(env, seed, actions, threshold)
        if rep.won and len(rep.actions) == len(actions):
            run.feasibility_proven = True
            run.note(Stage.feasibility, f"feasibility proven by search: seed {seed}, {len(actions)} action(s) the "
                     "fuzzer played reach full reward and end the episode", actions=actions, seed=seed)
            return f"no replayable solution(); a win found while fuzzing replays on seed {seed}"
    return None
