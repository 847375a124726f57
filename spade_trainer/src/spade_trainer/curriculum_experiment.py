"""SPADE against the fixed pool, in miniature: ``spade experiment curriculum``.

Two arms train the same embedded model with the same GRPO step, learning rate, seeds and
agent episodes per update, on the games domain's bottom rung (``higher_lower``, whose
source declares two knobs: ``CANDIDATES``, how many numbers are listed, and ``GUESSES``):

* ``fixed``: every update plays ``groups x group_size`` fresh instances of the rung at its
  default knobs (the fixed pool; no designer);
* ``spade``: every update the same model, acting as the designer, proposes ``groups``
  children of the current frontier parent through the designer's own parameter-edit prompt
  and parser (:func:`spade_designer.editing.parameter_edit_conversation`,
  :func:`~spade_designer.editing.parameter_child`); a reply that does not make a child
  (:class:`~spade_designer.editing.EditApplyError`) is rejected and counted, and its plays
  go to the parent so the agent's budget stays the fixed arm's. Each admitted child is
  played ``group_size`` times with its hint and ``group_size`` times without, on the same
  instances: regret (hinted minus unhinted mean return) and win rate give the designer
  reward (:func:`~.rewards.designer_reward`, the blend by default). The designer's samples
  (one GRPO group over the children, :class:`~.samples.Role` ``designer``) and the agent's
  unhinted episodes (one GRPO group per child) are trained in one step. The frontier moves
  to the admitted child with the highest designer reward;
* ``adaptive``: the fixed pool whose difficulty follows the agent by a fixed rule, in the
  spirit of RLVE (no designer, no LLM; :class:`~.adaptive.AdaptiveDifficulty`): the knob
  settings of :data:`LADDER` are levels, each group plays a level drawn from the current
  window, and measured success at the window's top moves it up (>= 0.9) or down (<= 0.1)
  once 16 plays there were counted. It starts at the rung's default knobs.

The hint of a child is a fixed true statement about the game at its knobs, written here
(:func:`strategy_hint`): the secret is uniform over the list, halving finds it, and whether
halving always wins with the child's guesses. It names no secret (the reference forbids
leaking the answer: a leaked answer rewards designs no one solves without it).

Both arms are evaluated at update 0 and every ``eval_every`` updates on held-out instances
(seeds from :data:`~.experiment.EVAL_SEED_BASE` up, never trained on) at several difficulty
levels (knob settings, :data:`DEFAULT_LEVELS`), with Wilson 95% intervals. Children keep
the parent's turn limit (4), as the designer's edits do.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .adaptive import AdaptiveDifficulty
from .errors import ConfigError
from .experiment import (
    EVAL_SEED_BASE,
    RUNG,
    Evaluation,
    LearningExperiment,
    mean_interval,
    pyplot,
    rung_engine,
    rung_source,
    save_figure,
)
from .experiment_settings import (
    ARMS,
    DEFAULT_LEVELS,
    FIXED_LEARN,
    CurriculumSettings,
    parse_levels,
)
from .samples import PolicySample, Role, with_advantages

CURRICULUM_FILE = "curriculum.json"
LOG_FILE = "curriculum.log"
#: The rung's skill: the designer's GRPO group.
SKILL = "logical_deduction"
CLASS_NAME = "HigherLowerEnv"
#: The rung's turn limit (children keep it, as an edit keeps its parent's).
MAX_TURNS = 4


@cache
def reference_success(candidates: int, guesses: int) -> float:
    """Success of a player that guesses a uniformly random listed number consistent with the
    feedback so far (exact, by recursion over the size of the side left). A difficulty scale
    for knob settings: ``1 - reference_success`` is :func:`difficulty`."""
    if guesses <= 0:
        return 0.0
    n = candidates
    if n <= 1:
        return 1.0
    rest = sum((k - 1) * reference_success(k - 1, guesses - 1) + (n - k) * reference_success(n - k, guesses - 1)
               for k in range(1, n + 1))
    return 1.0 / n + rest / (n * n)


def difficulty(candidates: int, guesses: int) -> float:
    """``1 - reference_success``: 0 when any consistent guess wins, towards 1 for many
    numbers and few guesses."""
    return round(1.0 - reference_success(candidates, guesses), 4)


def _ladder() -> tuple[tuple[int, int], ...]:
    """Every knob setting halving always wins (``CANDIDATES <= 2**GUESSES - 1``), from the
    easiest to the hardest by :func:`difficulty`; of the settings any consistent guess wins
    (difficulty 0) only ``2x2`` is kept."""
    pairs = [(c, g) for c in range(2, 16) for g in range(1, 5) if c <= 2**g - 1]
    ordered = sorted(pairs, key=lambda p: (difficulty(*p), p))
    return ((2, 2), *(p for p in ordered if difficulty(*p) > 0))


def strategy_hint(candidates: int, guesses: int) -> str:
    """The privileged hint of the rung at these knobs: true of every instance, no secret in it."""
    covered = 2**guesses - 1
    when = (f"With {candidates} numbers and {guesses} guesses halving always finds the secret in time."
            if candidates <= covered else
            f"With {candidates} numbers and {guesses} guesses halving finds the secret whenever it is among "
            f"the {covered} numbers halving can reach; no strategy is sure to win.")
    return ("The secret is equally likely to be any listed number. Halve the list: guess the middle listed "
            "number first; after 'higher' guess the middle of the listed numbers above your guess, after "
            f"'lower' the middle of those below. {when}")


#: The adaptive arm's levels: knob settings ``(CANDIDATES, GUESSES)``, easiest first.
LADDER: tuple[tuple[int, int], ...] = _ladder()


def adaptive_rule(candidates: int, guesses: int) -> AdaptiveDifficulty:
    """The adaptive arm's rule, starting at these knobs (the nearest level by difficulty when
    they are not on the ladder)."""
    if (candidates, guesses) in LADDER:
        start = LADDER.index((candidates, guesses))
    else:
        start = min(range(len(LADDER)), key=lambda i: abs(difficulty(*LADDER[i]) - difficulty(candidates, guesses)))
    return AdaptiveDifficulty(levels=len(LADDER), start=start)


@dataclass
class Frontier:
    """The parent the designer edits: its source, knobs and what was measured of it."""

    source: str
    candidates: int
    guesses: int
    win_rate: float | None = None
    regret: float | None = None

    def knobs(self) -> dict[str, int]:
        return {"CANDIDATES": self.candidates, "GUESSES": self.guesses}


class CurriculumExperiment:
    """One arm of one seed; see the module docstring. ``designer_policy`` (tests) replaces
    the shared model as the designer's sampler; its samples still train the shared model."""

    def __init__(self, settings: CurriculumSettings, run_dir: Path, *, model: Any = None, tokenizer: Any = None,
                 log: Callable[[str], None] = print, designer_policy: Any = None) -> None:
        self.settings = settings
        self.run_dir = Path(run_dir)
        self.log = log
        self._model, self._tokenizer = model, tokenizer
        self._designer_policy = designer_policy
        self._seed_env: Any = None

    # --- pieces -----------------------------------------------------------------------------

    def load(self) -> tuple[Any, Any]:
        """The model and tokenizer (the embedded model unless given)."""
        if self._model is None:
            from .config import ModelSettings
            from .models import load_policy

            self._model, self._tokenizer = load_policy(ModelSettings(device=self.settings.learn.device))
        return self._model, self._tokenizer

    def engine(self, model: Any, tokenizer: Any) -> Any:
        """The rollout engine of the learning experiment: trusted in-process environments."""
        return rung_engine(self.settings.learn, model, tokenizer)

    def playable(self, env_id: str, source: str, candidates: int, guesses: int) -> Any:
        from spade_core.metadata import ActionFormat

        from .rollout import PlayableEnv

        return PlayableEnv(env_id, source, "games", skill=SKILL, action_format=ActionFormat.boxed,
                           class_name=CLASS_NAME, max_turns=MAX_TURNS, hint=strategy_hint(candidates, guesses))

    def evaluate_levels(self, engine: Any, update: int) -> dict[str, Evaluation]:
        """Held-out success at every level (the learning experiment's evaluation at its knobs)."""
        out = {}
        for name, c, g in self.settings.levels:
            lexp = LearningExperiment(self.settings.at(c, g), self.run_dir, model=self._model,
                                      tokenizer=self._tokenizer, log=self.log)
            ev = lexp.evaluate(engine, update)
            out[name] = ev
            lo, hi = ev.interval
            self.log(f"[{self.settings.arm}] evaluation at update {update}, level {name} ({c} numbers, {g} guesses): "
                     f"success {ev.mean:.3f} [{lo:.3f}, {hi:.3f}] over {ev.episodes} held-out episodes "
                     f"({ev.seconds:.1f}s)")
        return out

    def eval_seeds(self) -> list[int]:
        return [EVAL_SEED_BASE + i for i in range(self.settings.learn.eval_episodes)]

    def _parent_metadata(self) -> Any:
        from spade_core.metadata import EnvMetadata
        from spade_core.plugins import get_plugins

        if self._seed_env is None:
            games = get_plugins().domain("games")
            self._seed_env = next(s for s in games.seed_envs if s.name == RUNG)
        return EnvMetadata(name=RUNG, domain="games", skill=SKILL, description=self._seed_env.description,
                           max_turns=MAX_TURNS, class_name=CLASS_NAME)

    def designer_backend(self) -> Any:
        from .chat_backend import PolicyChatBackend
        from .policy import TransformersPolicy

        model, tokenizer = self.load()
        policy = self._designer_policy or TransformersPolicy(model, tokenizer)
        return PolicyChatBackend(policy, tokenizer, name="policy", model_name="policy")

    # --- the spade arm's design step -------------------------------------------------------------

    def design(self, backend: Any, frontier: Frontier, update: int) -> list[dict[str, Any]]:
        """``groups`` parameter edits of ``frontier`` by the designer: per reply its
        completion, and the child (source and knobs) or the reason it was rejected."""
        from spade_core.knobs import read_knobs
        from spade_designer.editing import EditApplyError, Parent, parameter_child, parameter_edit_conversation
        from spade_designer.records import AgentStats

        s, learn = self.settings, self.settings.learn
        parent = Parent(self._parent_metadata(), frontier.source, read_knobs(frontier.source, CLASS_NAME))
        agent = None
        if frontier.win_rate is not None:
            agent = AgentStats(win_rate=frontier.win_rate, regret=frontier.regret, episodes=learn.group_size)
        convs = [parameter_edit_conversation(parent, agent=agent, start=i, prefill=True) for i in range(learn.groups)]
        comps = backend.chat(convs, max_new_tokens=s.designer_max_new_tokens, temperature=learn.temperature, top_p=1.0,
                             seed=(learn.seed * 1_000_003 + 104_729 * update) % 2**31, stop=["\n"])
        out = []
        for i, (conv, comp) in enumerate(zip(convs, comps, strict=True)):
            reply = conv[-1]["content"] + comp.text  # the prefilled start, then the generated text
            item: dict[str, Any] = {"index": i, "reply": reply, "completion": comp, "admitted": False}
            try:
                child, values, previous = parameter_child(parent, reply)
                knobs = {**frontier.knobs(), **{k: int(v) for k, v in values.items()}}
                _admission_check(child, knobs["CANDIDATES"], knobs["GUESSES"])
            except EditApplyError as exc:
                item["reason"] = str(exc)
            else:
                item.update(admitted=True, source=child, candidates=knobs["CANDIDATES"], guesses=knobs["GUESSES"],
                            changed=values, previous=previous)
            out.append(item)
        return out

    # --- one update of each arm -------------------------------------------------------------------

    def _agent_samples(self, labelled: Sequence[tuple[str, Any]], episodes: Sequence[Any]) -> list[PolicySample]:
        return [
            PolicySample(Role.agent, ep.prompt_ids, ep.completion_ids, ep.logprobs, ep.episode_return, group,
                         env_mask=ep.env_mask)
            for (group, spec), ep in zip(labelled, episodes, strict=True)
            if not spec.hinted and ep.usable and ep.model_tokens > 0 and ep.prompt_ids
        ]

    def fixed_update(self, engine: Any, rng: random.Random, u: int) -> tuple[list[PolicySample], dict[str, Any]]:
        from .rollout import EpisodeSpec

        s = self.settings.learn
        env = self.playable("higher_lower", rung_source(s.candidates, s.guesses), s.candidates, s.guesses)
        labelled = [(f"group-{g}", EpisodeSpec(env, False, rng.randrange(EVAL_SEED_BASE)))
                    for g in range(s.groups) for _ in range(s.group_size)]
        episodes = engine.run([spec for _, spec in labelled], seed=(s.seed * 7_919 + u) % 2**31)
        wins = sum(_won(ep) for ep in episodes)
        record = {"knobs": [{"CANDIDATES": s.candidates, "GUESSES": s.guesses}], "agent_episodes": len(episodes),
                  "train_success": wins / len(episodes), "generate_s": round(engine.last_stats.generate_s, 3),
                  "env_s": round(engine.last_stats.env_s, 3)}
        return with_advantages(self._agent_samples(labelled, episodes)), record

    def adaptive_update(self, engine: Any, rng: random.Random, u: int,
                        rule: AdaptiveDifficulty) -> tuple[list[PolicySample], dict[str, Any]]:
        """The adaptive arm's update: each group plays a level drawn from the rule's window
        (fresh instances, as the fixed arm's), then the rule sees every play's result."""
        from .rollout import EpisodeSpec

        s = self.settings.learn
        window = rule.state()
        labelled, levels = [], []
        for g in range(s.groups):
            level = rule.sample(rng)
            c, n = LADDER[level]
            env = self.playable(f"level-{level}", rung_source(c, n), c, n)
            seeds = [rng.randrange(EVAL_SEED_BASE) for _ in range(s.group_size)]
            labelled += [(f"group-{g}", EpisodeSpec(env, False, x)) for x in seeds]
            levels += [level] * s.group_size
        episodes = engine.run([spec for _, spec in labelled], seed=(s.seed * 7_919 + u) % 2**31)
        per_level: dict[int, list[bool]] = {}
        for level, ep in zip(levels, episodes, strict=True):
            won = _won(ep)
            rule.record(level, won)
            per_level.setdefault(level, []).append(won)
        move = rule.update()
        record = {"knobs": [{"CANDIDATES": LADDER[v][0], "GUESSES": LADDER[v][1]} for v in sorted(per_level)],
                  "window": {"lo": window["lo"], "hi": window["hi"],
                             "top": {"CANDIDATES": LADDER[window["hi"]][0], "GUESSES": LADDER[window["hi"]][1]},
                             "top_difficulty": difficulty(*LADDER[window["hi"]])},
                  "levels_played": {f"{LADDER[v][0]}x{LADDER[v][1]}": {"plays": len(w), "success": sum(w) / len(w)}
                                    for v, w in sorted(per_level.items())},
                  "move": move, "window_after": rule.state(),
                  "agent_episodes": len(episodes), "train_success": sum(_won(ep) for ep in episodes) / len(episodes),
                  "generate_s": round(engine.last_stats.generate_s, 3), "env_s": round(engine.last_stats.env_s, 3)}
        return with_advantages(self._agent_samples(labelled, episodes)), record

    def spade_update(self, engine: Any, backend: Any, rng: random.Random, u: int,
                     frontier: Frontier) -> tuple[list[PolicySample], dict[str, Any], Frontier]:
        from .regret import RegretEstimator
        from .rewards import DesignerRewardSpec, DesignerRewardVariant, designer_reward
        from .rollout import EpisodeSpec

        s = self.settings
        t0 = time.perf_counter()
        designs = self.design(backend, frontier, u)
        design_s = time.perf_counter() - t0
        labelled: list[tuple[str, Any]] = []
        children = []
        for d in designs:
            seeds = [rng.randrange(EVAL_SEED_BASE) for _ in range(s.learn.group_size)]
            if d["admitted"]:
                env = self.playable(f"child-{u}-{d['index']}", d["source"], d["candidates"], d["guesses"])
                children.append(env)
                d["env"] = env
                labelled += [(env.env_id, EpisodeSpec(env, False, x)) for x in seeds]
                labelled += [(env.env_id, EpisodeSpec(env, True, x)) for x in seeds]
            else:  # a rejected design's plays go to the parent: the agent's budget stays the fixed arm's
                env = self.playable(f"parent-{u}-{d['index']}", frontier.source, frontier.candidates, frontier.guesses)
                labelled += [(env.env_id, EpisodeSpec(env, False, x)) for x in seeds]
        episodes = engine.run([spec for _, spec in labelled], seed=(s.learn.seed * 7_919 + u) % 2**31)
        estimates = {e.env_id: e for e in RegretEstimator.summarise(children, episodes)}
        spec = DesignerRewardSpec(variant=DesignerRewardVariant(s.reward))
        designer_samples = []
        rows = []
        for d in designs:
            est = estimates.get(d["env"].env_id) if d["admitted"] else None
            measured = est is not None and est.measured
            reward = designer_reward(est.regret, est.win_rate, spec) if measured else designer_reward(None, None, spec)
            d["reward"] = reward
            comp = d["completion"]
            row: dict[str, Any] = {"index": d["index"], "reply": d["reply"], "admitted": d["admitted"],
                                   "reward": round(reward, 4)}
            if d["admitted"]:
                row.update(candidates=d["candidates"], guesses=d["guesses"],
                           difficulty=difficulty(d["candidates"], d["guesses"]))
                if measured:
                    row.update(success=round(est.win_rate, 4), hinted_success=round(est.hinted_win_rate, 4),
                               regret=round(est.regret, 4), plays=len(est.unhinted_returns))
            else:
                row["reason"] = d["reason"]
            trainable = comp.completion_ids and comp.prompt_ids and comp.logprobs is not None
            if trainable and (measured or s.invalid_designs == "shape"):
                designer_samples.append(PolicySample(Role.designer, list(comp.prompt_ids), list(comp.completion_ids),
                                                     list(comp.logprobs), reward, SKILL, valid=measured))
                row["trained"] = True
            else:
                row["trained"] = False
            rows.append(row)
        agent = self._agent_samples(labelled, episodes)
        samples = with_advantages([*designer_samples, *agent], designer_scale=s.scale)
        advantages = iter(x.advantage for x in samples[: len(designer_samples)])
        for row in rows:
            if row["trained"]:
                row["advantage"] = round(next(advantages), 4)
        unhinted = [ep for (_, spec_), ep in zip(labelled, episodes, strict=True) if not spec_.hinted]
        admitted = [d for d in designs if d["admitted"] and estimates.get(d["env"].env_id) is not None
                    and estimates[d["env"].env_id].measured]
        previous = frontier.knobs()
        if admitted:
            best = max(admitted, key=lambda d: d["reward"])  # ties: the first
            est = estimates[best["env"].env_id]
            frontier = Frontier(best["source"], best["candidates"], best["guesses"], est.win_rate, est.regret)
        record = {"parent": previous, "children": rows, "admitted": sum(d["admitted"] for d in designs),
                  "rejected": sum(not d["admitted"] for d in designs),
                  "designer_samples": len(designer_samples), "frontier": frontier.knobs(),
                  "frontier_difficulty": difficulty(frontier.candidates, frontier.guesses),
                  "agent_episodes": len(unhinted), "hinted_episodes": len(episodes) - len(unhinted),
                  "train_success": sum(_won(ep) for ep in unhinted) / max(1, len(unhinted)),
                  "knobs": [{"CANDIDATES": r["candidates"], "GUESSES": r["guesses"]} for r in rows if r["admitted"]],
                  "design_s": round(design_s, 3), "generate_s": round(engine.last_stats.generate_s, 3),
                  "env_s": round(engine.last_stats.env_s, 3)}
        return samples, record, frontier

    # --- the whole run ---------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        import torch

        from .policy_update import GRPOUpdate, UpdateSettings

        s, learn = self.settings, self.settings.learn
        self.run_dir.mkdir(parents=True, exist_ok=True)
        t_start = time.perf_counter()
        model, tokenizer = self.load()
        initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
        try:
            torch.manual_seed(learn.seed)
            engine = self.engine(model, tokenizer)
            backend = self.designer_backend() if s.arm == "spade" else None
            updater = GRPOUpdate(model, UpdateSettings(learning_rate=learn.learning_rate,
                                                       temperature=learn.temperature))
            rng = random.Random(f"{learn.seed}/train")  # the learning experiment's instance stream
            frontier = Frontier(rung_source(learn.candidates, learn.guesses), learn.candidates, learn.guesses)
            rule = adaptive_rule(learn.candidates, learn.guesses) if s.arm == "adaptive" else None
            evaluations: dict[str, list[Evaluation]] = {name: [] for name, _, _ in s.levels}
            for name, ev in self.evaluate_levels(engine, 0).items():
                evaluations[name].append(ev)
            records: list[dict[str, Any]] = []
            self.log(f"[{s.arm}] seed {learn.seed}: {learn.updates} updates of {learn.groups} x {learn.group_size} "
                     f"agent episodes, lr {learn.learning_rate:g}"
                     + (f", designer reward {s.reward}, designer scale {s.scale:g}" if s.arm == "spade" else ""))
            for u in range(1, learn.updates + 1):
                t0 = time.perf_counter()
                if s.arm == "spade":
                    samples, record, frontier = self.spade_update(engine, backend, rng, u, frontier)
                elif rule is not None:
                    samples, record = self.adaptive_update(engine, rng, u, rule)
                else:
                    samples, record = self.fixed_update(engine, rng, u)
                stats = updater.step(samples)
                record = {"update": u, **record, **stats.to_json(), "update_s": round(stats.seconds, 3),
                          "seconds": round(time.perf_counter() - t0, 3)}
                records.append(record)
                self._log_update(record)
                if u % learn.eval_every == 0 or u == learn.updates:
                    for name, ev in self.evaluate_levels(engine, u).items():
                        evaluations[name].append(ev)
            result = {
                "arm": s.arm,
                "settings": {**s.to_json(), "designer_scale_used": s.scale},
                "levels": {name: {"candidates": c, "guesses": g, "difficulty": difficulty(c, g),
                                  "evaluations": [e.to_json() for e in evaluations[name]]}
                           for name, c, g in s.levels},
                "updates": records,
                **({"ladder": [list(p) for p in LADDER], "moves": rule.moves} if rule is not None else {}),
                "seconds": round(time.perf_counter() - t_start, 1),
            }
        finally:
            model.load_state_dict(initial)  # the next seed (or arm) starts from the same weights
        (self.run_dir / CURRICULUM_FILE).write_text(json.dumps(result, indent=2), encoding="utf-8")
        write_curriculum_outputs(self.run_dir)
        self.log(f"[{s.arm}] seed {learn.seed} done in {result['seconds']:.0f}s: {self.run_dir / CURRICULUM_FILE}")
        return result

    def _log_update(self, r: dict[str, Any]) -> None:
        s = self.settings
        step = "no step" if r["skipped"] else f"grad norm {r['grad_norm']:.3f}"
        line = (f"[{s.arm}] update {r['update']}/{s.learn.updates}: train success {r['train_success']:.2f}, "
                f"{r['with_signal']}/{r['samples']} samples with signal, {step}, {r['seconds']:.1f}s "
                f"(generate {r['generate_s']:.1f}s, update {r['update_s']:.1f}s)")
        if s.arm == "spade":
            kids = ", ".join(f"{c['candidates']}x{c['guesses']}: success {c.get('success', float('nan')):.2f} "
                             f"regret {c.get('regret', float('nan')):.2f} reward {c['reward']:.2f}"
                             for c in r["children"] if c["admitted"])
            line += (f"; designer: {r['admitted']} admitted, {r['rejected']} rejected"
                     f"{' (' + kids + ')' if kids else ''}; frontier now {r['frontier']['CANDIDATES']}x"
                     f"{r['frontier']['GUESSES']}")
        if s.arm == "adaptive":
            top = r["window_after"]
            played = ", ".join(f"{k}: {v['success']:.2f} of {v['plays']}" for k, v in r["levels_played"].items())
            line += (f"; played {played}; window now {'x'.join(map(str, LADDER[top['lo']]))}.."
                     f"{'x'.join(map(str, LADDER[top['hi']]))}" + (f" (moved {r['move']:+d})" if r["move"] else ""))
        self.log(line)


def _won(ep: Any) -> bool:
    return bool(ep.terminated and (ep.rewards[-1] if ep.rewards else 0.0) >= 1.0)


def _admission_check(source: str, candidates: int, guesses: int) -> None:
    """A child is admitted when it loads, resets and its own solution wins (the parent is the
    trusted seed and only declared literals changed, so this is the validation that is left)."""
    from spade_core.source import instantiate, load_trusted_class
    from spade_designer.editing import EditApplyError

    try:
        env = instantiate(load_trusted_class(source, CLASS_NAME))
        env.reset(seed=0)
        _, reward, terminated, _, _ = env.step(env.solution()[0])
    except Exception as exc:  # the child does not run: rejected like an edit that does not apply
        raise EditApplyError(f"the child does not run: {type(exc).__name__}: {exc}") from None
    if not (terminated and reward >= 1.0):
        raise EditApplyError(f"the child's solution does not win ({candidates} numbers, {guesses} guesses)")


def run_seeds(run_dir: Path, settings: Sequence[CurriculumSettings], *, echo: Callable[[str], None] = print,
              model: Any = None, tokenizer: Any = None) -> list[Path]:
    """Run each settings (one arm, one seed each) in ``run_dir`` (one seed) or
    ``run_dir/seed-N`` (several, with ``curriculum-summary.*`` in ``run_dir``); every progress
    line goes to ``echo`` and to the seed folder's ``curriculum.log``. One model load for all."""
    run_dir = Path(run_dir)
    dirs = []
    for s in settings:
        out = run_dir if len(settings) == 1 else run_dir / f"seed-{s.learn.seed}"
        out.mkdir(parents=True, exist_ok=True)
        with (out / LOG_FILE).open("w", encoding="utf-8") as f:

            def log(line: str, _f: Any = f) -> None:
                echo(line)
                _f.write(line + "\n")
                _f.flush()

            exp = CurriculumExperiment(s, out, model=model, tokenizer=tokenizer, log=log)
            exp.run()
            model, tokenizer = exp.load()
        dirs.append(out)
    if len(dirs) > 1:
        summarise_curriculum(dirs, run_dir)
    return dirs


# --- outputs ------------------------------------------------------------------------------------


def read_curriculum(run_dir: Path) -> dict[str, Any] | None:
    """``run_dir/curriculum.json`` or ``None`` when there is none (or it is damaged)."""
    try:
        data = json.loads((Path(run_dir) / CURRICULUM_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "levels" in data else None


def _ci(e: dict[str, Any]) -> str:
    return f"{e['mean']:.3f} [{e['interval'][0]:.3f}, {e['interval'][1]:.3f}]"


def curriculum_table(data: dict[str, Any]) -> str:
    """Markdown: held-out success per level at each evaluation, and for the spade arm the
    children of every update."""
    levels = data["levels"]
    names = list(levels)
    head = " | ".join(f"{n} ({levels[n]['candidates']}x{levels[n]['guesses']}) [95% CI]" for n in names)
    rows = [f"| update | {head} |", "|---|" + "---|" * len(names)]
    by_update: dict[int, dict[str, dict[str, Any]]] = {}
    for n in names:
        for e in levels[n]["evaluations"]:
            by_update.setdefault(e["update"], {})[n] = e
    for u in sorted(by_update):
        rows.append(f"| {u} | " + " | ".join(_ci(by_update[u][n]) if n in by_update[u] else "-" for n in names) + " |")
    out = "\n".join(rows) + "\n"
    if data.get("arm") == "spade":
        out += ("\n| update | parent | children (CANDIDATESxGUESSES: unhinted success / hinted / regret / designer "
                "reward) | rejected | frontier |\n|---|---|---|---|---|\n")
        for r in data["updates"]:
            kids = "; ".join(
                f"{c['candidates']}x{c['guesses']}: {c.get('success', float('nan')):.2f} / "
                f"{c.get('hinted_success', float('nan')):.2f} / {c.get('regret', float('nan')):.2f} / {c['reward']:.2f}"
                for c in r["children"] if c["admitted"]) or "-"
            p, f = r["parent"], r["frontier"]
            out += (f"| {r['update']} | {p['CANDIDATES']}x{p['GUESSES']} | {kids} | {r['rejected']} "
                    f"| {f['CANDIDATES']}x{f['GUESSES']} |\n")
    if data.get("arm") == "adaptive":
        out += ("\n| update | window (levels) | levels played: success of plays | move |\n|---|---|---|---|\n")
        for r in data["updates"]:
            w = r["window"]
            played = "; ".join(f"{k}: {v['success']:.2f} of {v['plays']}" for k, v in r["levels_played"].items())
            move = {1: "up", -1: "down"}.get(r["move"], "-")
            out += f"| {r['update']} | {w['lo']}..{w['hi']} | {played} | {move} |\n"
    return out


def write_curriculum_outputs(run_dir: Path) -> list[Path]:
    """``curriculum.md`` and ``curriculum.png`` (and ``children.png`` for the spade arm)."""
    data = read_curriculum(run_dir)
    if data is None:
        return []
    run_dir = Path(run_dir)
    md = run_dir / "curriculum.md"
    md.write_text(curriculum_table(data), encoding="utf-8")
    out = [md, plot_levels([data], run_dir / "curriculum.png")]
    if data.get("arm") == "spade":
        out.append(plot_children(data, run_dir / "children.png"))
    if data.get("arm") == "adaptive":
        out.append(plot_window(data, run_dir / "window.png"))
    return out


ARM_COLOURS = {"fixed": "tab:blue", "spade": "tab:orange", "adaptive": "tab:green"}


def plot_levels(runs: Sequence[dict[str, Any]], out: Path) -> Path:
    """Held-out success per level (one panel each) against updates with 95% intervals, one
    line per run, coloured by arm."""
    plt = pyplot()
    names = list(runs[0]["levels"])
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8), squeeze=False)
    labelled: set[str] = set()
    for ax, name in zip(axes[0], names, strict=True):
        for data in runs:
            level = data["levels"].get(name)
            if level is None:
                continue
            evs = level["evaluations"]
            xs = [e["update"] for e in evs]
            arm = data.get("arm", "fixed")
            label = None if arm in labelled else arm
            labelled.add(arm)
            ax.plot(xs, [e["mean"] for e in evs], "-o", ms=3, color=ARM_COLOURS.get(arm), label=label)
            ax.fill_between(xs, [e["interval"][0] for e in evs], [e["interval"][1] for e in evs],
                            color=ARM_COLOURS.get(arm), alpha=0.12)
        lv = runs[0]["levels"][name]
        ax.set_title(f"{name}: {lv['candidates']} numbers, {lv['guesses']} guesses", fontsize=9)
        ax.set_xlabel("policy updates")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("held-out success (95% CI)")
    axes[0][0].legend(fontsize=8, loc="upper left")
    return save_figure(fig, out)


def plot_children(data: dict[str, Any], out: Path) -> Path:
    """The spade arm's curriculum: each admitted child's difficulty (1 - the random consistent
    guesser's success at its knobs) over updates, coloured by the agent's measured unhinted
    success on it, with the frontier's path; and measured success against difficulty."""
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.9))
    xs, ys, cs = [], [], []
    for r in data["updates"]:
        for c in r["children"]:
            if c["admitted"] and "success" in c:
                xs.append(r["update"])
                ys.append(c["difficulty"])
                cs.append(c["success"])
        rejected = r["rejected"]
        if rejected:
            ax.annotate(f"{rejected} rej.", (r["update"], -0.03), fontsize=7, ha="center", color="grey")
    ups = [0] + [r["update"] for r in data["updates"]]
    path = [difficulty(data["settings"]["candidates"], data["settings"]["guesses"])]
    path += [r["frontier_difficulty"] for r in data["updates"]]
    ax.step(ups, path, where="post", color="black", linewidth=1, label="frontier")
    sc = ax.scatter(xs, ys, c=cs, cmap="viridis", vmin=0, vmax=1, s=30, edgecolors="k", linewidths=0.3,
                    label="admitted children")
    fig.colorbar(sc, ax=ax, label="measured unhinted success")
    ax.set_xlabel("update (grey: designer replies rejected)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("difficulty (1 - random consistent guesser)")
    ax.set_ylim(-0.05, 1)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("children's difficulty over updates", fontsize=9)
    bx.scatter(ys, cs, c=xs, cmap="plasma", s=30, edgecolors="k", linewidths=0.3)
    grid = [i / 50 for i in range(51)]
    bx.plot(grid, [1 - g for g in grid], ":", color="grey", linewidth=1, label="random consistent guesser")
    bx.set_xlabel("difficulty")
    bx.set_ylabel("measured unhinted success")
    bx.set_xlim(-0.05, 1)
    bx.set_ylim(-0.05, 1.05)
    bx.legend(fontsize=7)
    bx.set_title("measured success against difficulty (colour: update)", fontsize=9)
    return save_figure(fig, out)


def plot_window(data: dict[str, Any], out: Path) -> Path:
    """The adaptive arm's curriculum: the window's difficulty range over updates, each level
    played coloured by the agent's success on it that update."""
    plt = pyplot()
    ladder = [tuple(p) for p in data["ladder"]]
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    ups = [r["update"] for r in data["updates"]]
    lo = [difficulty(*ladder[r["window"]["lo"]]) for r in data["updates"]]
    hi = [difficulty(*ladder[r["window"]["hi"]]) for r in data["updates"]]
    ax.fill_between(ups, lo, hi, step="mid", color="tab:green", alpha=0.15, label="window")
    ax.step(ups, hi, where="mid", color="tab:green", linewidth=1, label="window top")
    xs, ys, cs = [], [], []
    for r in data["updates"]:
        for knobs, v in r["levels_played"].items():
            c, g = (int(x) for x in knobs.split("x"))
            xs.append(r["update"])
            ys.append(difficulty(c, g))
            cs.append(v["success"])
    sc = ax.scatter(xs, ys, c=cs, cmap="viridis", vmin=0, vmax=1, s=30, edgecolors="k", linewidths=0.3,
                    label="levels played")
    fig.colorbar(sc, ax=ax, label="training success that update")
    ax.set_xlabel("update")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("difficulty (1 - random consistent guesser)")
    ax.set_ylim(-0.05, 0.5)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("adaptive arm: the window over updates", fontsize=9)
    return save_figure(fig, out)


#: Student's t 0.975 quantiles for 1..30 degrees of freedom (beyond: the normal 1.96).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def seed_interval(values: Sequence[float]) -> tuple[float, float]:
    """Student's t 95% interval of a mean over a few seeds (a normal one is far too narrow for
    three: 1.96 against 4.30 standard errors); one value: the value itself."""
    n = len(values)
    if n < 2:
        return mean_interval(values)
    return mean_interval(values, z=_T975[n - 2] if n - 1 <= len(_T975) else 1.959963984540054)


def newcombe(s1: int, n1: int, s2: int, n2: int) -> tuple[float, float, float]:
    """``p1 - p2`` of two independent success rates with Newcombe's 95% interval (the hybrid
    score interval built from each rate's Wilson interval)."""
    from spade_core.app.eval_harness import wilson

    p1, p2 = s1 / n1, s2 / n2
    l1, u1 = wilson(s1, n1)
    l2, u2 = wilson(s2, n2)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def _differences(found: Sequence[tuple[Path, dict[str, Any]]],
                 names: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """Each other arm against ``fixed``, per level, at the last evaluation: the per-seed
    differences (same seeds, same evaluation instances), their mean with Student's t 95%
    interval over seeds, and the pooled difference with Newcombe's interval over all episodes (which
    treats seeds as one population: narrower, and blind to seed spread)."""
    by_arm: dict[str, dict[int, dict[str, Any]]] = {}
    for _, r in found:
        by_arm.setdefault(r["arm"], {})[r["settings"]["seed"]] = r
    fixed = by_arm.get("fixed")
    out: dict[str, Any] = {}
    rows: list[str] = []
    if not fixed:
        return out, rows
    rows += ["", "| arm - fixed | level | seeds | per-seed differences | mean [t 95% CI over seeds] "
             "| pooled difference [Newcombe 95% CI] |", "|---|---|---|---|---|---|"]
    for arm in (a for a in ARMS if a != "fixed" and a in by_arm):
        seeds = sorted(set(by_arm[arm]) & set(fixed))
        if not seeds:
            continue
        out[arm] = {}
        for n in names:
            pairs = [(by_arm[arm][x]["levels"][n]["evaluations"][-1], fixed[x]["levels"][n]["evaluations"][-1])
                     for x in seeds]
            per_seed = [a["mean"] - b["mean"] for a, b in pairs]
            lo, hi = seed_interval(per_seed)
            d, plo, phi = newcombe(sum(a["successes"] for a, _ in pairs), sum(a["episodes"] for a, _ in pairs),
                                   sum(b["successes"] for _, b in pairs), sum(b["episodes"] for _, b in pairs))
            out[arm][n] = {"seeds": seeds, "per_seed": per_seed, "mean": sum(per_seed) / len(per_seed),
                           "interval": [lo, hi] if len(seeds) > 1 else None, "pooled": d,
                           "pooled_interval": [plo, phi]}
            spread = f"[{lo:+.3f}, {hi:+.3f}]" if len(seeds) > 1 else "(one seed)"
            rows.append(f"| {arm} | {n} | {len(seeds)} | {', '.join(f'{x:+.3f}' for x in per_seed)} "
                        f"| {sum(per_seed) / len(per_seed):+.3f} {spread} | {d:+.3f} [{plo:+.3f}, {phi:+.3f}] |")
    return out, rows


def summarise_curriculum(run_dirs: Sequence[Path], out_dir: Path) -> dict[str, Any]:
    """The runs of both arms side by side: per run the first and last held-out success of
    every level; per arm and level the mean of the last evaluations over seeds (Student t 95%
    interval over seeds) and the pooled last evaluations (Wilson over all their episodes).
    Writes ``curriculum-summary.md``, ``.png`` and ``.json`` in ``out_dir``."""
    import statistics

    from spade_core.app.eval_harness import wilson

    found = [(Path(d), r) for d in run_dirs if (r := read_curriculum(Path(d))) is not None]
    if not found:
        raise ConfigError(f"none of {[str(d) for d in run_dirs]} holds a {CURRICULUM_FILE}")
    names = list(found[0][1]["levels"])
    rows = ["| arm | seed | " + " | ".join(f"{n}: first -> last [95% CI]" for n in names) + " | s per update |",
            "|---|---|" + "---|" * len(names) + "---|"]
    for _, r in sorted(found, key=lambda dr: (dr[1]["arm"], dr[1]["settings"]["seed"])):
        cells = []
        for n in names:
            evs = (r["levels"].get(n) or {}).get("evaluations") or []
            cells.append(f"{evs[0]['mean']:.3f} -> {_ci(evs[-1])}" if evs else "-")
        secs = [u["seconds"] for u in r["updates"]]
        per = f"{statistics.median(secs):.1f}" if secs else "-"
        rows.append(f"| {r['arm']} | {r['settings']['seed']} | " + " | ".join(cells) + f" | {per} |")
    arms: dict[str, Any] = {}
    agg = ["", "| arm | level | seeds | last success: mean over seeds [t 95% CI over seeds] | pooled last [Wilson 95% CI] "
           "| first (update 0), pooled |", "|---|---|---|---|---|---|"]
    for arm in ARMS:
        mine = [r for _, r in found if r["arm"] == arm]
        if not mine:
            continue
        arms[arm] = {}
        for n in names:
            lasts = [r["levels"][n]["evaluations"][-1] for r in mine if r["levels"].get(n)]
            firsts = [r["levels"][n]["evaluations"][0] for r in mine if r["levels"].get(n)]
            means = [e["mean"] for e in lasts]
            lo, hi = seed_interval(means)
            wins, eps = sum(e["successes"] for e in lasts), sum(e["episodes"] for e in lasts)
            plo, phi = wilson(wins, eps)
            fw, fe = sum(e["successes"] for e in firsts), sum(e["episodes"] for e in firsts)
            spread = [lo, hi] if len(means) > 1 else None  # one seed has no spread over seeds
            arms[arm][n] = {"seeds": [r["settings"]["seed"] for r in mine], "last_means": means,
                            "mean": sum(means) / len(means), "interval": spread,
                            "pooled": wins / eps, "pooled_interval": [plo, phi], "first_pooled": fw / fe}
            between = f"[{lo:.3f}, {hi:.3f}]" if spread else "(one seed)"
            agg.append(f"| {arm} | {n} | {len(mine)} | {sum(means) / len(means):.3f} {between} "
                       f"| {wins / eps:.3f} [{plo:.3f}, {phi:.3f}] | {fw / fe:.3f} |")
    diffs, diff_rows = _differences(found, names)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "curriculum-summary.md").write_text("\n".join(rows + agg + diff_rows) + "\n", encoding="utf-8")
    plot_levels([r for _, r in found], out_dir / "curriculum-summary.png")
    summary = {"runs": [{"dir": str(d), "arm": r["arm"], "seed": r["settings"]["seed"]} for d, r in found],
               "arms": arms, "differences": diffs}
    (out_dir / "curriculum-summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


__all__ = ["ARMS", "CURRICULUM_FILE", "DEFAULT_LEVELS", "FIXED_LEARN", "LADDER", "LOG_FILE", "CurriculumExperiment",
           "CurriculumSettings", "Frontier", "adaptive_rule", "curriculum_table", "difficulty", "parse_levels",
           "newcombe", "plot_children", "plot_levels", "plot_window", "read_curriculum", "reference_success", "run_seeds", "seed_interval",
           "strategy_hint", "summarise_curriculum", "write_curriculum_outputs"]
