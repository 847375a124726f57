"""A run's learning curve on held-out instances (``[selfplay.learning]``): ``learning.json``.

The self-play loop measures, before its first iteration and after every ``every``
iterations (and its last), the policy's success on one environment (``target``: a seed or
stored environment at a knob setting, :mod:`.envrefs`) on instances it never trains on.
Three things make the curve a test that can fail:

* **held-out instances**: evaluation plays the instance seeds from
  :data:`~spade_core.returns.HELD_OUT_SEED_BASE` up; every training play draws below it
  (:meth:`~.regret.RegretEstimator.plan`);
* **a control**: the same run at learning rate 0. AdamW at learning rate 0 leaves the
  weights bit for bit (a test checks it), so the control at every point is the initial
  policy evaluated with that point's sampling seed: it is measured before the first update,
  for every point at once, and holds the noise of the measurement itself. (At point 0 the
  trained and control evaluations are the same play.)
* **the best constant policy**: the single reply that, repeated every turn, wins most often
  on the same instances, among the numbers the observations list, each instance's own
  ``solution()`` actions and every action the policy was seen to play (so a policy that
  drifts to one reply cannot beat it).

Evaluations sample at the run's temperature with a sampling seed of their own, through the
run's own rollout engine and sandbox. A success rate's interval is Wilson's score interval.
The file's shape is the one ``spade experiment learn`` has always written (``trained``,
``control``: evaluations with ``mean`` and ``interval``; ``constant``; ``verdict``);
:mod:`.learning_report` draws and tabulates it.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_core.app.eval_harness import wilson
from spade_core.metadata import ActionFormat
from spade_core.returns import HELD_OUT_SEED_BASE, episode_return, is_win

from .actions import extract_action

if TYPE_CHECKING:
    from .config import LearningSettings
    from .rollout import EnvBackend, Episode, PlayableEnv, RolloutEngine

LEARNING_FILE = "learning.json"
#: A constant reply that wins at least this often, as often as the trained policy, makes an
#: environment ``gameable``: success there says little about reading it.
GAMEABLE_AT = 0.1
#: New replies of the policy tried as constants after each evaluation (the most frequent).
NEW_CONSTANTS_PER_EVALUATION = 32


def mean_interval(values: Sequence[float], z: float = 1.959963984540054) -> tuple[float, float]:
    """Normal 95% interval of a mean (a single value: the value itself)."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    m = math.fsum(values) / n
    if n == 1:
        return m, m
    sd = math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))
    return m - z * sd / math.sqrt(n), m + z * sd / math.sqrt(n)


@dataclass(frozen=True)
class Evaluation:
    """One evaluation on the held-out instances, after ``update`` policy updates."""

    update: int
    episodes: int
    successes: int
    mean_return: float
    return_interval: tuple[float, float]
    seconds: float
    #: What the policy did (:func:`behaviour`).
    behaviour: dict[str, Any] = field(default_factory=dict)

    @property
    def mean(self) -> float:
        return self.successes / self.episodes

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.successes, self.episodes)

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {"update": self.update, "episodes": self.episodes, "mean": self.mean, "interval": [lo, hi],
                "successes": self.successes, "mean_return": self.mean_return,
                "return_interval": list(self.return_interval), "seconds": round(self.seconds, 3),
                "behaviour": self.behaviour}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evaluation:
        return cls(int(data["update"]), int(data["episodes"]), int(data["successes"]), float(data["mean_return"]),
                   tuple(data["return_interval"]), float(data.get("seconds", 0.0)), dict(data.get("behaviour") or {}))

    @classmethod
    def of(cls, update: int, episodes: Sequence[Episode], seconds: float) -> Evaluation:
        returns = [e.episode_return for e in episodes]
        wins = sum(e.terminated and is_win(e.episode_return) for e in episodes)
        return cls(update, len(episodes), wins, math.fsum(returns) / len(returns), mean_interval(returns), seconds,
                   behaviour([e.messages for e in episodes]))


_LISTED = re.compile(r"from this list: ([\d, ]+)\.")
_GUESS = re.compile(r"\\boxed\{\s*([+-]?\d+)\s*\}")
_TOLD = re.compile(r"the secret is (higher|lower) than (-?\d+)")


def behaviour(conversations: Sequence[Sequence[dict[str, str]]]) -> dict[str, Any]:
    """What a policy did on the ``higher_lower`` family, read from its episodes' messages:
    where its first valid guess fell among the listed candidates (``first``, ``middle`` ones,
    ``last``, a number not listed: ``unlisted``; ``invalid``: no valid guess at all), and of
    the second guesses that followed a miss, the share that went the way the feedback said
    and stayed in the list (``followed``). Episodes of other games count nowhere."""
    first: dict[str, int] = {"first": 0, "middle": 0, "last": 0, "unlisted": 0, "invalid": 0}
    chances = followed = 0
    for messages in conversations:
        user = [m["content"] for m in messages if m.get("role") == "user"]
        replies = [m["content"] for m in messages if m.get("role") == "assistant"]
        listed = _LISTED.search(user[0]) if user else None
        if listed is None or not replies:
            continue
        candidates = [int(x) for x in listed.group(1).split(",") if x.strip()]
        guesses = [(_GUESS.search(r), u) for r, u in zip(replies, user[1:] + [""], strict=False)]
        valid = [(int(g.group(1)), told) for g, told in guesses if g is not None]
        if not valid:
            first["invalid"] += 1
            continue
        value = valid[0][0]
        if value not in candidates:
            first["unlisted"] += 1
        elif value == candidates[0]:
            first["first"] += 1
        elif value == candidates[-1]:
            first["last"] += 1
        else:
            first["middle"] += 1
        told = _TOLD.search(valid[0][1])
        if told and len(valid) > 1:
            chances += 1
            nxt, bound = valid[1][0], int(told.group(2))
            followed += nxt in candidates and (nxt > bound if told.group(1) == "higher" else nxt < bound)
    n = sum(first.values())
    if n == 0:
        return {}
    return {"first_guess": {k: round(v / n, 4) for k, v in first.items()},
            "second_guesses": chances, "followed": round(followed / chances, 4) if chances else None}


# --- the best constant policy ----------------------------------------------------------------


def constant_wins(backend: EnvBackend, env: PlayableEnv, seeds: Sequence[int], actions: Sequence[str]) -> list[int]:
    """For each action, the instances of ``seeds`` it wins when repeated every turn (through
    ``backend``: the run's sandbox, or an in-process pool for trusted code). One instance per
    seed is spawned once and reset for every action."""
    handles = [backend.spawn(env.source, allowed_modules=env.allowed_modules, class_name=env.class_name)
               for _ in seeds]
    out = []
    try:
        for action in actions:
            resets = backend.reset_many(list(zip(handles, seeds, strict=True)))
            live = [i for i, r in enumerate(resets) if not isinstance(r, BaseException)]
            wins, turn = 0, 0
            while live and turn < env.max_turns:
                turn += 1
                results = backend.step_many([(handles[i], action) for i in live])
                still = []
                for i, res in zip(live, results, strict=True):
                    if isinstance(res, BaseException):
                        continue
                    reward, terminated, truncated = float(res[1]), bool(res[2]), bool(res[3])
                    if terminated or truncated:
                        wins += terminated and is_win(episode_return(reward, terminated))
                    else:
                        still.append(i)
                live = still
            out.append(wins)
    finally:
        for h in handles:
            try:
                backend.close_env(h)
            except Exception:
                pass  # a worker that already died needs no closing
    return out


def observed_constants(backend: EnvBackend, env: PlayableEnv, seeds: Sequence[int]) -> list[str]:
    """Candidate constant replies read from the instances themselves: each one's
    ``solution()`` actions and, for a boxed game, every number its first observation lists
    (most frequent first)."""
    from spade_core.actions import format_boxed

    counts: Counter[str] = Counter()
    handle = backend.spawn(env.source, allowed_modules=env.allowed_modules, class_name=env.class_name)
    try:
        for seed in seeds:
            (res,) = backend.reset_many([(handle, seed)])
            if isinstance(res, BaseException):
                continue
            obs = str(res[0] if isinstance(res, tuple) else res)
            if env.action_format is ActionFormat.boxed:
                counts.update(format_boxed(n) for n in dict.fromkeys(re.findall(r"-?\d+", obs)))
            try:
                solution = backend.call(handle, "solution")
            except Exception:
                continue  # an environment that cannot state its solution offers none
            steps = [solution] if isinstance(solution, str) else list(solution or [])
            counts.update(str(s) for s in steps if isinstance(s, str) and s)
    finally:
        backend.close_env(handle)
    return [a for a, _ in counts.most_common()]


def played_actions(episodes: Sequence[Episode]) -> list[str]:
    """The distinct actions the policy sent in ``episodes``, most frequent first."""
    counts: Counter[str] = Counter()
    for ep in episodes:
        fmt = ep.spec.env.action_format
        counts.update(extract_action(m["content"], fmt) for m in ep.messages if m.get("role") == "assistant")
    return [a for a, _ in counts.most_common()]


# --- the verdicts --------------------------------------------------------------------------------


def verdict(trained: Sequence[Evaluation], control: Sequence[Evaluation] | None, constant: float) -> dict[str, Any]:
    """What the intervals support: the last evaluation above the first (intervals apart),
    above the best constant policy (its lower bound over the constant's rate), and the
    control's last evaluation not above its first (intervals apart)."""
    first, last = trained[0], trained[-1]
    out: dict[str, Any] = {"rose": last.interval[0] > first.interval[1], "above_constant": last.interval[0] > constant}
    if control:
        out["control_rose"] = control[-1].interval[0] > control[0].interval[1]
    out["learned"] = out["rose"] and out["above_constant"] and not out.get("control_rose", False)
    return out


def learnability(trained: Sequence[Evaluation], control: Sequence[Evaluation] | None, constant: float,
                 with_signal: Sequence[int]) -> str:
    """One word for an environment after K updates (``with_signal``: samples that carried a
    GRPO signal in each update), checked in this order:

    * ``learnable``: :func:`verdict`'s ``learned`` (rose, above the best constant, control flat);
    * ``no_signal``: no update had a sample with signal (every play of a group scored alike);
    * ``gameable``: a constant reply wins at least as often as the policy after K updates,
      and at least :data:`GAMEABLE_AT` of the time;
    * ``not_learned``: there was signal, but the curve did not rise above both in K updates.
    """
    if verdict(trained, control, constant)["learned"]:
        return "learnable"
    if not any(with_signal):
        return "no_signal"
    if constant >= max(GAMEABLE_AT, trained[-1].mean):
        return "gameable"
    return "not_learned"


def eval_seed(run_seed: int, point: int) -> int:
    """The sampling seed of the evaluation after ``point`` updates (the control's at that point too)."""
    return (run_seed * 1_000_003 + 7919 * (point + 1)) % 2**31


# --- the curve of one run ---------------------------------------------------------------------


class LearningCurve:
    """Measures and writes one run's ``learning.json`` (see the module docstring).

    ``engine`` is the run's rollout engine (its policy, sampling, reply shape and backend);
    ``backend`` the pool the best constant is played in (the engine's). Call :meth:`start`
    before the first update (it measures the constant, and the control when asked), then
    :meth:`evaluate` at every :meth:`due` iteration.
    """

    def __init__(self, settings: LearningSettings, target: PlayableEnv, engine: RolloutEngine, backend: EnvBackend,
                 *, run_dir: Path, seed: int, iterations: int, meta: dict[str, Any],
                 log: Callable[[str], None] = print) -> None:
        self.settings = settings
        self.target = target
        self.engine = engine
        self.backend = backend
        self.path = Path(run_dir) / LEARNING_FILE
        self.seed = seed
        self.iterations = iterations
        self.meta = meta
        self.log = log
        self.trained: list[Evaluation] = []
        self.control: list[Evaluation] = []
        self.constant, self.constant_action = -1.0, ""
        self.tried: set[str] = set()
        self.updates: list[dict[str, Any]] = []
        self.seconds = 0.0
        self._last_actions: list[str] = []

    @property
    def seeds(self) -> list[int]:
        return [HELD_OUT_SEED_BASE + i for i in range(self.settings.episodes)]

    def points(self) -> list[int]:
        """The iterations evaluated: 0 (the initial policy), every ``every``-th, the last."""
        every = self.settings.every
        return [0, *(i for i in range(1, self.iterations + 1) if i % every == 0 or i == self.iterations)]

    def due(self, iteration: int) -> bool:
        return iteration in self.points() and not any(e.update == iteration for e in self.trained)

    def start(self, *, resumed_at: int | None = None) -> None:
        """Read what a resumed run measured (its evaluations up to ``resumed_at``), or measure
        the best constant among the instances' own replies and, with ``control = "eval"``,
        the control at every point."""
        t0 = time.perf_counter()
        if resumed_at is not None and self.path.is_file():
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.trained = [Evaluation.from_json(e) for e in data.get("trained", []) if e["update"] <= resumed_at]
            self.control = [Evaluation.from_json(e) for e in data.get("control", [])]
            self.constant, self.constant_action = float(data["constant"]), str(data.get("constant_action", ""))
            self.tried = set(data.get("constants_tried", []))
            self.updates = [u for u in (data.get("updates") or {}).get("trained", []) if u["update"] <= resumed_at]
            self.seconds = float(data.get("seconds", 0.0))
            return
        self.try_constants(observed_constants(self.backend, self.target, self.seeds)[: self.settings.constant_candidates])
        self.log(f"learning curve of {self.meta.get('target')}: best constant reply {self.constant_action!r} wins "
                 f"{self.constant:.3f} of {len(self.seeds)} held-out instances ({len(self.tried)} replies tried)")
        if self.settings.control == "eval":
            for point in self.points():
                self.control.append(self._play(point, "control (lr 0)"))
        self.seconds += time.perf_counter() - t0
        self.write()

    def try_constants(self, actions: Sequence[str]) -> None:
        fresh = [a for a in dict.fromkeys(actions) if a not in self.tried]
        if not fresh:
            return
        for action, wins in zip(fresh, constant_wins(self.backend, self.target, self.seeds, fresh), strict=True):
            self.tried.add(action)
            if wins / len(self.seeds) > self.constant:
                self.constant, self.constant_action = wins / len(self.seeds), action

    def _play(self, point: int, label: str) -> Evaluation:
        from .rollout import EpisodeSpec

        t0 = time.perf_counter()
        specs = [EpisodeSpec(self.target, False, s) for s in self.seeds]
        size, seed = self.settings.batch, eval_seed(self.seed, point)
        episodes = [ep for i in range(0, len(specs), size) for ep in self.engine.run(specs[i: i + size], seed=seed + i)]
        ev = Evaluation.of(point, episodes, time.perf_counter() - t0)
        lo, hi = ev.interval
        self.log(f"{label} after {point} update(s): success {ev.mean:.3f} [{lo:.3f}, {hi:.3f}] on {ev.episodes} "
                 f"held-out instances of {self.meta.get('target')} ({ev.seconds:.1f}s)")
        self._last_actions = played_actions(episodes)
        return ev

    def evaluate(self, iteration: int) -> Evaluation:
        """The trained policy after ``iteration`` updates (the control's play when it is the
        same: point 0 under ``control = "eval"``); writes ``learning.json``."""
        t0 = time.perf_counter()
        same = next((c for c in self.control if c.update == iteration), None) if iteration == 0 else None
        if same is not None:
            ev = same
            self.log("trained after 0 update(s): the control's evaluation at 0 (the same weights and seed)")
        else:
            ev = self._play(iteration, "trained")
            self.try_constants(self._last_actions[:NEW_CONSTANTS_PER_EVALUATION])
        self.trained = [e for e in self.trained if e.update != iteration] + [ev]
        self.seconds += time.perf_counter() - t0
        self.write()
        return ev

    def note_update(self, iteration: int, record: dict[str, Any]) -> None:
        """What the iteration's update did (from its metrics line)."""
        update = record.get("update") or {}
        train = record.get("train") or {}
        self.updates = [u for u in self.updates if u["update"] != iteration]
        self.updates.append({"update": iteration, "train_success": record.get("solve_rate"),
                             "with_signal": update.get("nonzero_advantages", 0), "samples": train.get("samples"),
                             "skipped": update.get("skipped"), "grad_norm": update.get("grad_norm"),
                             "seconds": round(sum(v for k, v in (record.get("timings") or {}).items()
                                                  if k in ("collect_s", "update_s")), 3)})

    def result(self) -> dict[str, Any]:
        trained = sorted(self.trained, key=lambda e: e.update)
        control = [c for c in self.control if any(c.update == t.update for t in trained)]
        out: dict[str, Any] = {
            "trained": [e.to_json() for e in trained],
            "control": [e.to_json() for e in control],
            "constant": max(self.constant, 0.0),
            "constant_action": self.constant_action,
            "constants_tried": sorted(self.tried),
            "settings": {**self.meta, "episodes": self.settings.episodes, "every": self.settings.every,
                         "control": self.settings.control, "points": self.points()},
            "updates": {"trained": self.updates, "control": []},
            "seconds": round(self.seconds, 1),
        }
        if trained:
            out["verdict"] = verdict(trained, control or None, out["constant"])
            if len(trained) > 1:
                out["verdict"]["learnability"] = learnability(trained, control or None, out["constant"],
                                                              [u.get("with_signal") or 0 for u in self.updates])
        return out

    def write(self) -> dict[str, Any]:
        """``learning.json`` (its table and plot: :func:`.learning_report.write_learning_outputs`)."""
        data = self.result()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.partial")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        tmp.replace(self.path)
        return data


def read_learning(run_dir: Path) -> dict[str, Any] | None:
    """``run_dir/learning.json`` or ``None`` when the run has none (or it is damaged)."""
    path = Path(run_dir) / LEARNING_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "trained" in data else None


__all__ = ["GAMEABLE_AT", "LEARNING_FILE", "Evaluation", "LearningCurve", "behaviour", "constant_wins", "eval_seed",
           "learnability", "mean_interval", "observed_constants", "played_actions", "read_learning", "verdict"]
