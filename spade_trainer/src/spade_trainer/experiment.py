"""The learning experiment: does the project's GRPO make the embedded model better at a game?

``spade experiment learn --run-dir DIR --seed N`` trains the agent alone (no designer) on
the bottom rung of the games domain (``higher_lower``: a secret among listed numbers,
"higher"/"lower" after a miss) and measures, every ``eval_every`` updates, success and
return on held-out instances with 95% intervals. Three things make the curve a test that
can fail:

* **held-out instances**: training draws instance seeds below :data:`EVAL_SEED_BASE`;
  evaluation plays the instances from it upwards, never trained on;
* **a control**: the same run at learning rate 0 (same code path, same samples drawn,
  weights that cannot move), evaluated the same way: a rise there would be an artefact of
  the measurement, not learning;
* **the best constant policy**: the success of the single best action repeated every turn
  on the same held-out instances. A policy that drifts to a constant reply (the failure a
  probe of the old recipe found) cannot beat it.

Evaluation samples at the training temperature with a fresh sampling seed at each
evaluation, so consecutive evaluations of unchanged weights differ by sampling noise only
(which the control shows). The interval of a success rate is Wilson's score interval.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spade_core.app.eval_harness import wilson
from spade_core.returns import HELD_OUT_SEED_BASE

from .errors import ConfigError
from .experiment_settings import TRAINER_NAMES, LearnSettings
from .samples import PolicySample, Role, with_advantages

#: Held-out instances are seeds from here upwards (the kernel's one home of the rule).
EVAL_SEED_BASE = HELD_OUT_SEED_BASE
LEARNING_FILE = "learning.json"
#: The seed game the experiment trains on.
RUNG = "higher_lower"

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
    """One evaluation on the held-out instances."""

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


_LISTED = re.compile(r"from this list: ([\d, ]+)\.")
_GUESS = re.compile(r"\\boxed\{\s*([+-]?\d+)\s*\}")
_TOLD = re.compile(r"the secret is (higher|lower) than (-?\d+)")


def behaviour(conversations: Sequence[Sequence[dict[str, str]]]) -> dict[str, Any]:
    """What a policy did on the rung, read from its episodes' messages: where its first
    valid guess fell among the listed candidates (``first``, ``middle`` ones, ``last``, a
    number not listed: ``unlisted``; ``invalid``: no valid guess at all), and of the second guesses that followed a miss, the
    share that went the way the feedback said and stayed in the list (``followed``). Reading
    the observation shows in the first; using feedback across turns in the second."""
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
    return {"first_guess": {k: round(v / n, 4) if n else None for k, v in first.items()},
            "second_guesses": chances, "followed": round(followed / chances, 4) if chances else None}


def rung_source(candidates: int, guesses: int) -> str:
    """The rung's source at the given knobs (through the designer's knob editor, as an edit would)."""
    from spade_core.knobs import apply_values, read_knobs
    from spade_core.plugins import get_plugins

    games = get_plugins().domain("games")
    seed = next((s for s in games.seed_envs if s.name == RUNG), None)
    if seed is None:
        raise ConfigError(f"the games domain has no seed game {RUNG!r} (is spade-games up to date?)")
    source = seed.source()
    knobs = read_knobs(source, seed.class_name)
    return apply_values(source, knobs, {"CANDIDATES": candidates, "GUESSES": guesses})


def rung_engine(settings: Any, model: Any, tokenizer: Any) -> Any:
    """The rollout engine the rung's experiments play with: trusted in-process environments,
    ``settings``' reply budget, temperature, prefill and cut (a :class:`LearnSettings` or
    any settings with those fields)."""
    from .inprocess import TrustedEnvPool
    from .policy import Sampling, TransformersPolicy
    from .rollout import ReplyShape, RolloutEngine, TokenBudget

    s = settings
    return RolloutEngine(TrustedEnvPool(), TransformersPolicy(model, tokenizer), tokenizer,
                         budget=TokenBudget(per_turn=s.max_new_tokens, per_episode=4096),
                         sampling=Sampling(s.temperature, 1.0),
                         reply=ReplyShape(prefill=s.prefill, cut_at_action=s.cut_at_action))


def best_constant(make_env: Callable[[], Any], actions: Sequence[str], seeds: Sequence[int]) -> tuple[str, float]:
    """The action that, repeated every turn, succeeds most often on ``seeds``, and its success
    rate. ``make_env()`` gives a fresh in-process :class:`~spade_core.env.TextEnv`."""
    best, rate = "", -1.0
    env = make_env()
    try:
        for action in actions:
            wins = 0
            for s in seeds:
                env.reset(seed=s)
                terminated = truncated = False
                reward = 0.0
                while not (terminated or truncated):
                    _, reward, terminated, truncated, _ = env.step(action)
                wins += terminated and reward >= 1.0
            if wins / len(seeds) > rate:
                best, rate = action, wins / len(seeds)
    finally:
        env.close()
    return best, rate


@dataclass
class Curve:
    """One run's evaluations and per-update records."""

    label: str
    learning_rate: float
    evaluations: list[Evaluation] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)


class LearningExperiment:
    """Runs one seed's trained and control curves; see the module docstring."""

    def __init__(self, settings: LearnSettings, run_dir: Path, *, model: Any = None, tokenizer: Any = None,
                 log: Callable[[str], None] = print) -> None:
        self.settings = settings
        self.run_dir = Path(run_dir)
        self.log = log
        self._model, self._tokenizer = model, tokenizer

    # --- pieces -----------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            from .config import ModelSettings
            from .models import load_policy

            self._model, self._tokenizer = load_policy(ModelSettings(device=self.settings.device))
        return self._model, self._tokenizer

    def _env(self) -> Any:
        from spade_core.metadata import ActionFormat

        from .rollout import PlayableEnv

        s = self.settings
        return PlayableEnv("higher_lower", rung_source(s.candidates, s.guesses), "games", skill="logical_deduction",
                           action_format=ActionFormat.boxed, class_name="HigherLowerEnv", max_turns=4)

    def _engine(self, model: Any, tokenizer: Any) -> Any:
        return rung_engine(self.settings, model, tokenizer)

    def constant_baseline(self) -> tuple[str, float]:
        """The best constant action over the rung's whole action vocabulary, on the held-out seeds."""
        from spade_core.env import ReferenceEnvAdapter
        from spade_core.source import load_trusted_class

        env = self._env()
        cls = load_trusted_class(env.source, env.class_name)
        make = lambda: ReferenceEnvAdapter(cls(), max_turns=env.max_turns)  # noqa: E731
        low, high = cls.LOW, cls.HIGH
        actions = [f"\\boxed{{{v}}}" for v in range(low - 1, high + 2)]
        return best_constant(make, actions, self.eval_seeds())

    def eval_seeds(self) -> list[int]:
        return [EVAL_SEED_BASE + i for i in range(self.settings.eval_episodes)]

    def evaluate(self, engine: Any, update: int) -> Evaluation:
        from .rollout import EpisodeSpec

        t0 = time.perf_counter()
        env = self._env()
        specs = [EpisodeSpec(env, False, s) for s in self.eval_seeds()]
        # a sampling seed of its own per evaluation: unchanged weights differ by noise only
        episodes = self._play(engine, specs, seed=(self.settings.seed * 1_000_003 + 7919 * (update + 1)) % 2**31)
        returns = [e.episode_return for e in episodes]
        wins = sum(e.terminated and (e.rewards[-1] if e.rewards else 0.0) >= 1.0 for e in episodes)
        return Evaluation(update, len(episodes), wins, math.fsum(returns) / len(returns), mean_interval(returns),
                          time.perf_counter() - t0, behaviour([e.messages for e in episodes]))

    def _play(self, engine: Any, specs: Sequence[Any], seed: int, batch: int = 64) -> list[Any]:
        out: list[Any] = []
        for i in range(0, len(specs), batch):
            out.extend(engine.run(specs[i : i + batch], seed=seed + i))
        return out

    def _train_specs(self, rng: random.Random) -> list[tuple[str, Any]]:
        from .rollout import EpisodeSpec

        s, env = self.settings, self._env()
        specs = []
        for g in range(s.groups):
            shared = rng.randrange(EVAL_SEED_BASE)
            for _ in range(s.group_size):
                seed = shared if s.group_instance == "shared" else rng.randrange(EVAL_SEED_BASE)
                specs.append((f"group-{g}", EpisodeSpec(env, False, seed)))
        return specs

    # --- one curve --------------------------------------------------------------------------

    def run_curve(self, label: str, learning_rate: float, initial_state: dict[str, Any]) -> Curve:
        from .policy_update import GRPOUpdate, UpdateSettings

        s = self.settings
        model, tokenizer = self._load()
        model.load_state_dict(initial_state)
        import torch

        torch.manual_seed(s.seed)
        engine = self._engine(model, tokenizer)
        updater = GRPOUpdate(model, UpdateSettings(learning_rate=learning_rate, temperature=s.temperature))
        rng = random.Random(f"{s.seed}/train")  # the same instances for the trained run and its control
        curve = Curve(label, learning_rate)
        curve.evaluations.append(self.evaluate(engine, 0))
        self._log_eval(label, curve.evaluations[-1])
        for u in range(1, s.updates + 1):
            t0 = time.perf_counter()
            labelled = self._train_specs(rng)
            episodes = engine.run([spec for _, spec in labelled], seed=(s.seed * 7_919 + u) % 2**31)
            gen_s, env_s = engine.last_stats.generate_s, engine.last_stats.env_s
            samples = [
                PolicySample(Role.agent, ep.prompt_ids, ep.completion_ids, ep.logprobs, ep.episode_return, group,
                             env_mask=ep.env_mask)
                for (group, _), ep in zip(labelled, episodes, strict=True)
                if ep.usable and ep.model_tokens > 0 and ep.prompt_ids
            ]
            samples = with_advantages(samples)
            stats = updater.step(samples)
            wins = sum(ep.terminated and (ep.rewards[-1] if ep.rewards else 0.0) >= 1.0 for ep in episodes)
            record = {**stats.to_json(), "update": u, "train_success": wins / len(episodes),
                      "seconds": round(time.perf_counter() - t0, 3), "generate_s": round(gen_s, 3),
                      "env_s": round(env_s, 3), "update_s": round(stats.seconds, 3)}
            curve.updates.append(record)
            self.log(f"[{label}] update {u}/{s.updates}: train success {record['train_success']:.2f}, "
                     f"{stats.with_signal}/{stats.samples} samples with signal, "
                     f"{'no step' if stats.skipped else f'grad norm {stats.grad_norm:.3f}'}, "
                     f"{record['seconds']:.1f}s (generate {gen_s:.1f}s, env {env_s:.2f}s, update {stats.seconds:.1f}s)")
            if u % s.eval_every == 0 or u == s.updates:
                curve.evaluations.append(self.evaluate(engine, u))
                self._log_eval(label, curve.evaluations[-1])
        return curve

    def evaluate_only(self, label: str, state: dict[str, Any], updates: Sequence[int]) -> Curve:
        """The evaluations of fixed weights ``state`` at the given update numbers (each with
        the sampling seed the trained curve used there)."""
        model, tokenizer = self._load()
        model.load_state_dict(state)
        engine = self._engine(model, tokenizer)
        curve = Curve(label, 0.0)
        for u in updates:
            curve.evaluations.append(self.evaluate(engine, u))
            self._log_eval(label, curve.evaluations[-1])
        return curve

    def _log_eval(self, label: str, ev: Evaluation) -> None:
        lo, hi = ev.interval
        self.log(f"[{label}] evaluation at update {ev.update}: success {ev.mean:.3f} [{lo:.3f}, {hi:.3f}] "
                 f"over {ev.episodes} held-out episodes ({ev.seconds:.1f}s)")

    # --- the whole experiment ---------------------------------------------------------------

    def run(self, make_curve: Callable[..., Curve] | None = None) -> dict[str, Any]:
        """The whole experiment. ``make_curve(experiment, label, learning_rate, initial_state)``
        makes the trained curve: :meth:`run_curve` (the project's step) by default;
        :func:`spade_trainer.experiment_trl.run_learning` passes TRL's."""
        s = self.settings
        if make_curve is None:
            if s.trainer != "spade":
                raise ConfigError(f"trainer = {s.trainer!r} is run by spade_trainer.experiment_trl.run_learning "
                                  f"(`spade experiment learn --trainer {s.trainer}`)")
            make_curve = LearningExperiment.run_curve
        self.run_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        constant_action, constant = self.constant_baseline()
        self.log(f"best constant policy: {constant_action} succeeds on {constant:.3f} of the held-out instances")
        model, _ = self._load()
        initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
        trained = make_curve(self, "trained", s.learning_rate, initial)
        control = None
        if s.control == "full":
            control = self.run_curve("control", 0.0, initial)
        elif s.control == "eval":
            control = self.evaluate_only("control", initial, [e.update for e in trained.evaluations])
        model.load_state_dict(initial)
        result = {
            "trained": [e.to_json() for e in trained.evaluations],
            "control": [e.to_json() for e in control.evaluations] if control else [],
            "constant": constant,
            "constant_action": constant_action,
            "settings": asdict(s),
            "updates": {"trained": trained.updates, "control": control.updates if control else []},
            "seconds": round(time.perf_counter() - t0, 1),
            "verdict": verdict(trained.evaluations, control.evaluations if control else None, constant),
        }
        (self.run_dir / LEARNING_FILE).write_text(json.dumps(result, indent=2), encoding="utf-8")
        write_learning_outputs(self.run_dir)
        return result


def verdict(trained: Sequence[Evaluation], control: Sequence[Evaluation] | None, constant: float) -> dict[str, Any]:
    """What the intervals support: the last evaluation above the first (intervals apart),
    above the best constant policy (its lower bound over the constant's rate), and the
    control's last evaluation not above its first (intervals apart)."""
    first, last = trained[0], trained[-1]
    out: dict[str, Any] = {
        "rose": last.interval[0] > first.interval[1],
        "above_constant": last.interval[0] > constant,
    }
    if control:
        out["control_rose"] = control[-1].interval[0] > control[0].interval[1]
    out["learned"] = out["rose"] and out["above_constant"] and not out.get("control_rose", False)
    return out


def read_learning(run_dir: Path) -> dict[str, Any] | None:
    """``run_dir/learning.json`` or ``None`` when the run has none (or it is damaged)."""
    path = Path(run_dir) / LEARNING_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "trained" in data else None


def learning_table(data: dict[str, Any]) -> str:
    """A Markdown table of one experiment's evaluations."""
    control = {e["update"]: e for e in data.get("control") or []}
    rows = ["| update | trained success [95% CI] | control (lr 0) success [95% CI] | best constant |",
            "|---|---|---|---|"]
    for e in data["trained"]:
        c = control.get(e["update"])
        ctext = f"{c['mean']:.3f} [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}]" if c else "-"
        rows.append(f"| {e['update']} | {e['mean']:.3f} [{e['interval'][0]:.3f}, {e['interval'][1]:.3f}] | {ctext} "
                    f"| {data['constant']:.3f} |")
    return "\n".join(rows) + "\n"


def behaviour_table(data: dict[str, Any]) -> str:
    """A Markdown table of what the trained policy did at each evaluation (:func:`behaviour`)."""
    rows = ["| update | first guess: first listed / middle / last / unlisted / invalid | second guess followed the feedback |",
            "|---|---|---|"]
    for e in data["trained"]:
        b = e.get("behaviour") or {}
        fg = b.get("first_guess") or {}
        if not fg:
            continue
        shares = " / ".join("-" if fg.get(k) is None else f"{fg[k]:.2f}" for k in ("first", "middle", "last", "unlisted", "invalid"))
        fol = "-" if b.get("followed") is None else f"{b['followed']:.2f} of {b.get('second_guesses')}"
        rows.append(f"| {e['update']} | {shares} | {fol} |")
    return "\n".join(rows) + "\n" if len(rows) > 2 else ""


def write_learning_outputs(run_dir: Path) -> list[Path]:
    """``learning.md`` (the table) and ``learning.png`` (the curves) beside ``learning.json``."""
    data = read_learning(run_dir)
    if data is None:
        return []
    run_dir = Path(run_dir)
    md = run_dir / "learning.md"
    md.write_text(learning_table(data) + "\n" + behaviour_table(data), encoding="utf-8")
    png = run_dir / "learning.png"
    plot_learning([data], png)
    return [md, png]


def trainer_of(data: dict[str, Any]) -> str:
    """Who made a run's updates (runs from before the option: ``spade``)."""
    return str((data.get("settings") or {}).get("trainer") or "spade")


def run_names(runs: Sequence[dict[str, Any]]) -> list[str]:
    """A legend name per run: ``seed N``, led by the trainer's name when the runs mix trainers."""
    mixed = len({trainer_of(r) for r in runs}) > 1
    names = []
    for i, data in enumerate(runs):
        name = f"seed {(data.get('settings') or {}).get('seed', i)}"
        names.append(f"{TRAINER_NAMES.get(trainer_of(data), trainer_of(data))}, {name}" if mixed else name)
    return names


def plot_learning(runs: Sequence[dict[str, Any]], out: Path, labels: Sequence[str] | None = None) -> Path:
    """Success on held-out instances against updates: trained (solid) and control (dashed)
    with their 95% intervals, and the best constant policy (dotted), one colour per run. A
    control whose evaluations repeat one already drawn (runs from the same initial weights and
    seed evaluate the same control) and a constant shared by every run are drawn once. With
    several runs each is shifted a little along the x axis and its trained intervals drawn as
    bars too, so that curves that coincide stay visible side by side."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(labels) if labels else run_names(runs)
    constants = {r["constant"] for r in runs}
    drawn_controls: list[list[tuple[int, int, int]]] = []
    for i, data in enumerate(runs):
        c = colours[i % len(colours)]
        for key, style in (("trained", "-"), ("control", "--")):
            evs = data.get(key) or []
            if not evs:
                continue
            if key == "control":
                points = [(e["update"], e["successes"], e["episodes"]) for e in evs if "successes" in e]
                if points and points in drawn_controls:
                    continue
                drawn_controls.append(points)
            shift = (i - (len(runs) - 1) / 2) * 0.15 if len(runs) > 1 else 0.0
            xs = [e["update"] + shift for e in evs]
            means, lows, highs = ([e["mean"] for e in evs], [e["interval"][0] for e in evs],
                                  [e["interval"][1] for e in evs])
            # the control is the same whoever trains (the spade path's, at lr 0): no trainer in its name
            label = f"{names[i]} trained" if key == "trained" else f"{names[i].split(', ')[-1]} control (lr 0)"
            ax.plot(xs, means, style, color=c, marker="o", ms=3, label=label)
            ax.fill_between(xs, lows, highs, color=c, alpha=0.15 if key == "trained" else 0.07)
            if key == "trained" and len(runs) > 1:
                ax.errorbar(xs, means, yerr=[[m - lo for m, lo in zip(means, lows, strict=True)],
                                             [hi - m for m, hi in zip(means, highs, strict=True)]],
                            fmt="none", ecolor=c, elinewidth=1, capsize=3)
        if len(constants) > 1:
            ax.axhline(data["constant"], color=c, linestyle=":", linewidth=1)
    if len(constants) == 1:
        (constant,) = constants
        ax.axhline(constant, color="grey", linestyle=":", linewidth=1, label=f"best constant policy ({constant:.3f})")
    ax.set_xlabel("policy updates")
    ax.set_ylabel("success on held-out instances")
    ax.set_ylim(0, 1)
    ax.set_title("higher_lower: success with 95% intervals (dotted: best constant policy)")
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(fig, out)


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out: Path) -> Path:
    """Lay out, write (its folder made) and close one experiment figure; ``out`` back."""
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    pyplot().close(fig)
    return out


def _median_seconds(data: dict[str, Any]) -> float | None:
    """Median seconds per update of a run's trained curve (``None`` without records)."""
    import statistics

    secs = [u["seconds"] for u in (data.get("updates") or {}).get("trained") or [] if "seconds" in u]
    return statistics.median(secs) if secs else None


def summarise(run_dirs: Sequence[Path], out_dir: Path) -> dict[str, Any]:
    """Several runs' experiments (seeds, or trainers) in one table (``summary.md``), plot and JSON."""
    runs = [(Path(d), read_learning(Path(d))) for d in run_dirs]
    found = [(d, r) for d, r in runs if r is not None]
    if not found:
        raise ConfigError(f"none of {[str(d) for d in run_dirs]} holds a {LEARNING_FILE}")
    rows = ["| seed | trainer | first [95% CI] | last [95% CI] | control first -> last | best constant | rose "
            "| above constant | control rose | median s per update |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for _d, r in found:
        t, c, v = r["trained"], r.get("control") or [], r.get("verdict") or {}
        ctext = f"{c[0]['mean']:.3f} -> {c[-1]['mean']:.3f}" if c else "-"
        med = _median_seconds(r)
        rows.append(f"| {r['settings']['seed']} | {TRAINER_NAMES.get(trainer_of(r), trainer_of(r))} "
                    f"| {t[0]['mean']:.3f} [{t[0]['interval'][0]:.3f}, {t[0]['interval'][1]:.3f}] "
                    f"| {t[-1]['mean']:.3f} [{t[-1]['interval'][0]:.3f}, {t[-1]['interval'][1]:.3f}] | {ctext} "
                    f"| {r['constant']:.3f} | {v.get('rose')} | {v.get('above_constant')} | {v.get('control_rose')} "
                    f"| {'-' if med is None else f'{med:.1f}'} |")
    learned = sum(bool((r.get("verdict") or {}).get("learned")) for _, r in found)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.md").write_text("\n".join(rows) + f"\n\nlearned (all three conditions) in {learned} of "
                                        f"{len(found)} runs\n", encoding="utf-8")
    plot_learning([r for _, r in found], out_dir / "summary.png")
    summary = {"seeds": [r["settings"]["seed"] for _, r in found], "trainers": [trainer_of(r) for _, r in found],
               "learned": learned, "runs": len(found)}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


__all__ = ["EVAL_SEED_BASE", "LEARNING_FILE", "TRAINER_NAMES", "Evaluation", "LearnSettings", "LearningExperiment", "behaviour",
           "behaviour_table", "best_constant",
           "learning_table", "mean_interval", "plot_learning", "pyplot", "read_learning", "run_names", "rung_source",
           "save_figure", "summarise", "trainer_of", "verdict", "wilson", "write_learning_outputs"]
