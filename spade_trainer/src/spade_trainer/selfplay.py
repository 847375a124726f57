"""The self-play loop: design, validate, admit, play (hinted and unhinted), measure regret,
reward both roles, and update the shared policy — one GRPO step per iteration.

:meth:`SelfPlayRun.iterate` is one iteration, top to bottom: design, choose, play,
reward, update, finish. The update is a component it calls (:class:`~.learner.Learner`:
the GRPO step, the optimizer, accelerate, vLLM weights); :meth:`SelfPlayRun.run` calls
``iterate`` until the configured number of iterations is reached.

Checkpoints (every ``checkpoint_every`` iterations, and after the last) hold the policy as
a Hugging Face model folder, the optimizer and every process's random state
(:meth:`~.learner.Learner.save`), plus, for each process, ``selfplay_state.json``
(iteration, config fingerprint, number of processes) and a consistent copy of its store
(environments, hints, stats; the designer's memory is rebuilt from it). Resuming restores
all of them; a checkpoint counts only once every process of the launch has written its part.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from spade_core.app.eval_harness import EVALS_FILE
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.returns import is_win

from .adaptive import AdaptivePool
from .config import SelfPlayConfig
from .design_protocol import DesignedCandidate, DesignStage
from .edit_stage import record_designs
from .errors import CheckpointError
from .memory import return_freed_memory
from .metrics import MetricsLog
from .periodic_eval import PeriodicEvaluation
from .plan import CHECKPOINTS, plan_run
from .policy import Sampling, TokenPolicy
from .ranks import collection_seed, process_rank, rank_folder, rng_digest
from .regret import RegretEstimator, RegretMeasurement
from .role_samples import agent_samples, designer_samples
from .rollout import EnvBackend, PlayableEnv, ReplyShape, RolloutEngine, TokenBudget
from .run_archive import ArchiveLimits, RunArchive
from .run_pool import import_named_pool, import_seed_pool, import_store_pool
from .samples import PolicySample
from .threads import apply_threads

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.plugins import SpadePlugins

    from .learner import Learner, StepReport
    from .learning import LearningCurve

STATE_FILE = "selfplay_state.json"
STORE_FILE = "store.db"


@dataclass
class IterationRecord:
    """What one iteration did; becomes one line of ``metrics.jsonl``."""

    iteration: int
    data: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"iteration": self.iteration, **self.data, "timings": dict(self.timings)}


__all__ = ["CHECKPOINTS", "STATE_FILE", "STORE_FILE", "IterationRecord", "SelfPlayRun", "latest_checkpoint",
           "process_rank", "rank_folder"]


def _is_complete(checkpoint: Path, world_size: int) -> bool:
    # each process writes its state file last, after the learner saved its own part
    return all((checkpoint / rank_folder(r) / STATE_FILE).is_file() for r in range(world_size))


def latest_checkpoint(run_dir: Path, world_size: int = 1) -> Path | None:
    """The newest ``checkpoint-N`` folder of a run that holds the state of every one of
    ``world_size`` processes, or ``None``. A checkpoint that a crash left without some
    process's state is passed over, so every process of a resumed launch reads the same one."""
    root = Path(run_dir) / CHECKPOINTS
    found = [p for p in root.glob("checkpoint-*") if _is_complete(p, world_size)] if root.is_dir() else []
    return max(found, key=lambda p: int(p.name.rsplit("-", 1)[1]), default=None)


def _copy_sqlite(src: Path, dst: Path) -> None:
    """A consistent copy of a live SQLite database (the backup API, not a file copy)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        dst.unlink()
    with sqlite3.connect(str(src)) as a, sqlite3.connect(str(dst)) as b:
        a.backup(b)


class SelfPlayRun:
    """One self-play run over ``config.run_dir``.

    The pieces are injected so tests can swap them: ``design_stage_factory(run)`` builds
    the :class:`DesignStage` (default: the real designer), ``env_backend`` the pool that
    runs environments (default: a ``SandboxPool``).

    Under a multi-process launch (accelerate DDP / DeepSpeed) every process runs its own
    collection — its own store and metrics in ``run_dir/rank-<r>`` (rank 0 in ``run_dir``)
    — and the learner averages the gradients of all processes' samples in one update; the shared
    ``run_dir/checkpoints`` holds each rank's state in ``checkpoint-N/rank-<r>``.
    """

    def __init__(
        self,
        config: SelfPlayConfig,
        *,
        console: Console | None = None,
        design_stage_factory: Callable[[SelfPlayRun], DesignStage] | None = None,
        env_backend: EnvBackend | None = None,
        plugins: SpadePlugins | None = None,
        spade_config: SpadeConfig | None = None,
    ) -> None:
        self.config = config
        if spade_config is None:  # an embedding caller that did not load one: the active configuration
            from spade_core.config import load_config

            spade_config = load_config()
        #: ``[spade]`` / ``[validation]`` / ``[designer]``-level settings every stage reads
        #: (loaded once). Its ``sandbox`` is the run's: ``[spade.sandbox]`` with
        #: ``[selfplay.sandbox]`` applied, so that rollouts, the designer's validation and the
        #: periodic evaluation run environments under the same settings.
        self.spade_config = spade_config.model_copy(update={"sandbox": config.sandbox.applied_to(spade_config.sandbox)})
        self.root_dir = Path(config.run_dir)
        self.rank, self.world_size = process_rank()
        self.run_dir = self.root_dir / rank_folder(self.rank)
        self.console = console or Console()
        self._design_stage_factory = design_stage_factory
        self._env_backend = env_backend
        from spade_core.plugins import get_plugins

        self.plugins = plugins or get_plugins()
        self.domain = self.plugins.domain(config.domain)
        self.skills = list(config.skills or self.domain.skills)
        unknown = sorted(set(self.skills) - set(self.domain.skills))
        if unknown:
            from .errors import ConfigError

            raise ConfigError(f"skills {unknown} are not skills of domain {config.domain!r}: {self.domain.skills}")
        self.iteration = 0
        self.records: list[IterationRecord] = []
        self._progress: Progress | None = None
        self._task: Any = None
        # an EnvStore and a Learner once setup() has run, None before it and after close();
        # typed Optional, each of their uses would need a None check of its own
        self.store: Any = None
        self.learner: Learner = None  # type: ignore[assignment]
        self.policy: TokenPolicy | None = None
        self.stage: DesignStage | None = None
        #: The adaptive fixed-pool baseline's windows (``[selfplay.adaptive]``), else None.
        self.adaptive: AdaptivePool | None = None
        self.evaluation: PeriodicEvaluation | None = None
        #: The held-out learning curve (``[selfplay.learning]``), else None.
        self.learning: LearningCurve | None = None
        #: Episodes and environment steps (agent turns) played so far, every iteration's.
        self.episodes_played = 0
        self.env_steps = 0

    # --- setup ------------------------------------------------------------------------

    @property
    def store_path(self) -> Path:
        return self.run_dir / STORE_FILE

    def _open_store(self) -> None:
        from spade_core.store import EnvStore

        self.store = EnvStore(f"sqlite:///{self.store_path}")

    def _build_policy(self, learner: Learner, tokenizer: Any) -> TokenPolicy:
        if self.config.generation.backend == "vllm":
            from .policy import VLLMPolicy

            return VLLMPolicy(learner.generation_engine(), stop_token_ids=[tokenizer.eos_token_id])
        from .policy import TransformersPolicy

        return TransformersPolicy(learner.model, tokenizer)

    def _default_backend(self) -> EnvBackend:
        # config.rollout picks the local SandboxPool or sandbox actors on Ray (ray is
        # imported only for the latter); the run's sandbox settings give the limits either way.
        from spade_sandbox.launcher import SandboxLauncher

        from .distributed import env_backend_for

        return env_backend_for(self.config, SandboxLauncher.from_config(self.spade_config))

    def _default_design_stage(self) -> DesignStage:
        # the designer stage, mixing writing and editing when [selfplay.designer.edit] asks for it
        from .edit_stage import build_operator_stage

        return build_operator_stage(self.policy, self.tokenizer, self.config, self.spade_config,
                                    store=self.store, plugins=self.plugins)

    def _checkpoint_to_resume(self) -> Path:
        """The newest checkpoint that every process of this launch can resume from."""
        checkpoint = latest_checkpoint(self.root_dir, self.world_size)
        newest = latest_checkpoint(self.root_dir, 1)  # rank 0's part is there
        for candidate in sorted({c for c in (newest, checkpoint) if c is not None}):
            state = json.loads((candidate / STATE_FILE).read_text(encoding="utf-8"))
            written_by = int(state.get("world_size", 1))
            if written_by != self.world_size:
                # each process's store, metrics and RNG stream belong to its rank: another
                # number of processes could not continue the same run
                raise CheckpointError(
                    f"{candidate} was written by a launch of {written_by} process(es) and this launch has "
                    f"{self.world_size}; resume with the same number (accelerate launch --num_processes {written_by})"
                )
        if checkpoint is None:
            raise CheckpointError(f"nothing to resume: no checkpoint with the {STATE_FILE} of all {self.world_size} "
                                  f"process(es) under {self.root_dir / CHECKPOINTS}")
        return checkpoint

    def setup(self, *, resume: bool = False) -> Path | None:
        """Prepare the run folder, store, model, learner and stages; returns the checkpoint resumed."""
        from .learner import Learner
        from .models import load_policy

        cfg = self.config
        # before anything is written: a bad setting fails here
        plan = plan_run(cfg, plugins=self.plugins, spade_config=self.spade_config)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        checkpoint = self._checkpoint_to_resume() if resume else None
        if checkpoint is not None:
            mine = checkpoint / rank_folder(self.rank)
            state = json.loads((mine / STATE_FILE).read_text(encoding="utf-8"))
            if state.get("fingerprint") != cfg.fingerprint():
                raise CheckpointError(
                    f"{checkpoint} was written with a different configuration; resume with the same "
                    "settings (only iterations, run_dir, logging, checkpoint_every and rollout may change)"
                )
            self.iteration = int(state["iteration"])
            _copy_sqlite(mine / STORE_FILE, self.store_path)
        elif any(p.exists() for p in (self.run_dir / "metrics.jsonl", self.store_path, self.run_dir / EVALS_FILE)):
            raise CheckpointError(f"{self.run_dir} already holds a run; pass --resume or choose another run_dir")
        evals = self.run_dir / EVALS_FILE
        if checkpoint is not None and evals.exists():  # a resumed run evaluates again what it redoes
            from spade_core.app.jsonl import read_jsonl

            keep = [r for r in read_jsonl(evals) if int(r.get("iteration") or 0) <= self.iteration]
            evals.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in keep), encoding="utf-8")
        (self.run_dir / "config.json").write_text(cfg.model_dump_json(indent=2), encoding="utf-8")
        self._open_store()
        if cfg.pool:  # the named environments instead of the whole seed pool
            import_named_pool(self.store, cfg.pool, cfg.domain, self.plugins, self.spade_config)
        elif cfg.import_seed_pool:
            import_seed_pool(self.store, self.domain)
        if cfg.pool_from is not None:
            import_store_pool(self.store, cfg.pool_from, cfg.domain)
        self.metrics = MetricsLog(self.run_dir, cfg.logging, run_name=self.run_dir.name)
        self.metrics.truncate_after(self.iteration)
        self._count_played()
        self.archive = RunArchive(self.run_dir, ArchiveLimits(transcripts_per_env=cfg.transcripts_per_env))
        self.archive.truncate_after(self.iteration)
        self.records = []

        apply_threads(cfg.model.threads)
        model, tokenizer = load_policy(cfg.model)
        self.tokenizer = tokenizer
        gen = cfg.generation
        self.learner = Learner(model, tokenizer, plan.update, cpu=cfg.model.device == "cpu", seed=cfg.seed,
                               designer_scale=cfg.designer_reward_scale, bf16=cfg.model.dtype == "bfloat16",
                               activation_checkpointing=plan.activation_checkpointing, vllm=plan.vllm)
        self.policy = self._build_policy(self.learner, tokenizer)
        self.backend = self._env_backend if self._env_backend is not None else self._default_backend()
        self.engine = RolloutEngine(
            self.backend,
            self.policy,
            tokenizer,
            budget=TokenBudget(per_turn=gen.agent_max_new_tokens, per_episode=gen.episode_token_budget),
            sampling=Sampling(gen.temperature, gen.top_p),
            reply=ReplyShape(prefill=gen.agent_prefill, cut_at_action=gen.cut_at_action),
        )
        self.estimator = RegretEstimator(self.engine, cfg.plays_per_condition)
        if cfg.designs:  # a fixed pool has no designer at all
            factory = self._design_stage_factory or (lambda run: run._default_design_stage())
            self.stage = factory(self)
        if cfg.adaptive.enabled:
            self.adaptive = AdaptivePool(cfg.adaptive, self.store)
            if checkpoint is not None:
                saved = state.get("adaptive") or {}
                self.adaptive.restore(saved, [m for m in self._pool() if m.id in saved])
        if cfg.learning.enabled and self.rank == 0:
            self.learning = self._learning_curve()
        if cfg.eval.every > 0 and self.rank == 0:  # the weights are the same in every process
            self.evaluation = PeriodicEvaluation(cfg.eval, plugins=self.plugins, spade_config=self.spade_config,
                                                 max_new_tokens=gen.agent_max_new_tokens)
        if checkpoint is not None:  # last: the random state continues from where the checkpoint left it
            self.learner.load(checkpoint)
        return checkpoint

    def _count_played(self) -> None:
        """Episodes and steps of the iterations already in ``metrics.jsonl`` (a resumed run)."""
        self.episodes_played = self.env_steps = 0
        path = self.run_dir / "metrics.jsonl"
        if not path.is_file():
            return
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if int(row.get("iteration", 0)) <= self.iteration:
                self.episodes_played += int(row.get("episodes") or 0)
                self.env_steps += int(row.get("env_steps") or 0)

    def evaluate_now(self) -> Any:
        """The periodic evaluation of the current weights (``None`` when not due)."""
        if self.evaluation is None or not self.evaluation.due(self.iteration):
            return None
        from .chat_backend import PolicyChatBackend

        self._status(f"evaluating the policy after iteration {self.iteration} on {self.config.eval.suite}",
                     iteration_line=False)
        t0 = time.perf_counter()
        backend = PolicyChatBackend(self.policy, self.tokenizer, name="policy", model_name=self.config.model.source)
        result = self.evaluation.run(backend, run_dir=self.run_dir, iteration=self.iteration,
                                     episodes=self.episodes_played, env_steps=self.env_steps,
                                     policy=f"selfplay:{self.root_dir.name}", snapshot=f"step-{self.iteration}")
        o = result.overall
        self.console.log(
            f"eval {result.suite} after iteration {self.iteration}: success {o.success_rate:.1%} "
            f"[{o.success_ci[0]:.2f}, {o.success_ci[1]:.2f}] return {o.mean_return:.3f} turns {o.mean_turns:.1f} "
            f"({o.n} episodes, {o.errors} errors, {time.perf_counter() - t0:.1f}s) -> {self.run_dir / EVALS_FILE}"
        )
        return result

    def _learning_curve(self) -> LearningCurve:
        """The run's held-out curve on ``learning.target``, played by the run's own engine."""
        from .envrefs import playable
        from .learning import LearningCurve
        from .run_pool import resolve_refs

        cfg = self.config
        (target,) = resolve_refs([cfg.learning.target], self.plugins, self.spade_config)
        env = playable(target, self.plugins, env_id=f"held-out/{target.metadata.name}",
                       max_turns=cfg.generation.max_turns)
        about = {"target": str(target.ref), "seed": cfg.seed, "iterations": cfg.iterations,
                 "learning_rate": cfg.optim.learning_rate, "temperature": cfg.generation.temperature,
                 "fixed_pool": cfg.fixed_pool, "pool": list(cfg.pool), "label": cfg.learning.label}
        return LearningCurve(cfg.learning, env, self.engine, self.backend, run_dir=self.run_dir, seed=cfg.seed,
                             iterations=cfg.iterations, meta=about,
                             log=lambda line: self.console.log(line, markup=False, highlight=False))

    def measure_learning(self) -> None:
        """The held-out curve's evaluation of the current weights, when one is due."""
        if self.learning is None or not self.learning.due(self.iteration):
            return
        from .learning_report import write_learning_outputs

        self._status(f"measuring held-out success after {self.iteration} update(s)", iteration_line=False)
        apply_threads(self.config.model.threads)
        self.learning.evaluate(self.iteration)
        write_learning_outputs(self.run_dir)  # the table and the plot, as the curve grows

    # --- one iteration ------------------------------------------------------------------

    def skills_for(self, iteration: int) -> list[str]:
        """Round-robin skills of ``iteration`` (1-based)."""
        k = min(self.config.skills_per_iteration, len(self.skills))
        start = ((iteration - 1) * k) % len(self.skills)
        return [self.skills[(start + j) % len(self.skills)] for j in range(k)]

    def _phase(self, text: str) -> None:
        """A new phase of the iteration: show it, and choose torch's threads for it."""
        self._status(text)
        apply_threads(self.config.model.threads)

    def _status(self, text: str, *, iteration_line: bool = True) -> None:
        line = f"iteration {self.iteration + 1}/{self.config.iterations}: {text}" if iteration_line else text
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=line)
        if not self.console.is_terminal:  # a log file gets every stage as a line instead of a live bar
            self.console.log(line)

    def _agent_stats(self, skill: str) -> dict[str, float] | None:
        metas = [m for m in self.store.find(domain=self.config.domain, skill=skill, status=EnvStatus.admitted)
                 if m.latest_stats is not None]
        if not metas:
            return None
        wins = [m.latest_stats.win_rate for m in metas]
        regrets = [m.latest_stats.regret or 0.0 for m in metas]
        return {"win_rate": sum(wins) / len(wins), "regret": sum(regrets) / len(regrets), "envs": float(len(metas))}

    def _pool(self) -> list[EnvMetadata]:
        """The run's admitted environments of its domain, by id."""
        return sorted(self.store.find(domain=self.config.domain, status=EnvStatus.admitted), key=lambda m: m.id)

    def choose_envs(self, new_ids: Sequence[str], rng: random.Random) -> list[EnvMetadata]:
        """This iteration's environments: every new admission, then a uniform draw from the pool."""
        pool = self._pool()
        by_id = {m.id: m for m in pool}
        chosen = [by_id[i] for i in new_ids if i in by_id]
        rest = [m for m in pool if m.id not in set(new_ids)]
        room = max(0, self.config.envs_per_iteration - len(chosen))
        chosen.extend(rng.sample(rest, min(room, len(rest))))
        return chosen

    def _playable(self, meta: EnvMetadata, seed: int, *, hinted: bool = True) -> PlayableEnv:
        source = self.store.get_source(meta.id)
        hint = meta.hint
        if not hint and hinted and self.stage is not None:
            hint = self.stage.write_hint(source, seed=seed).strip() or "Read the rules carefully and plan each move."
            self.store.set_hint(meta.id, hint[:4000])
        return PlayableEnv(
            env_id=meta.id,
            source=source,
            domain=meta.domain,
            skill=meta.skill,
            action_format=meta.action_format,
            allowed_modules=frozenset(self.domain.allowed_modules),
            class_name=meta.class_name,
            max_turns=min(meta.max_turns, self.config.generation.max_turns),
            hint=hint,
        )

    def iterate(self) -> IterationRecord:
        """One iteration, top to bottom: design, choose, play, reward, update, finish."""
        cfg = self.config
        it = self.iteration + 1
        seed = collection_seed(cfg.seed, it, self.rank)
        rng = random.Random(seed)
        record = IterationRecord(it)
        # the global generators as the iteration starts: a resumed run must match a straight one here
        record.data["rng_at_start"] = rng_digest()
        t0 = time.perf_counter()

        candidates = self.design(it, seed, record)
        chosen, playable = self.choose(candidates, rng, seed, record)
        measurement = self.play(playable, seed, record)
        samples = self.reward(candidates, chosen, measurement, record)
        record.timings["collect_s"] = time.perf_counter() - t0
        self.update(samples, record)
        self.finish(record)
        return record

    def design(self, it: int, seed: int, record: IterationRecord) -> list[DesignedCandidate]:
        """The designer's candidates for this iteration's skills (none for a fixed pool)."""
        t0 = time.perf_counter()
        candidates: list[DesignedCandidate] = []
        if self.stage is not None:
            for j, skill in enumerate(self.skills_for(it)):
                self._phase(f"designing ({skill})")
                candidates.extend(self.stage.design(skill, self.config.designs_per_skill, seed=seed * 31 + j,
                                                    agent_stats=self._agent_stats(skill)))
        record.timings["design_s"] = time.perf_counter() - t0
        return candidates

    def choose(self, candidates: Sequence[DesignedCandidate], rng: random.Random, seed: int,
               record: IterationRecord) -> tuple[list[EnvMetadata], list[PlayableEnv]]:
        """This iteration's environments (:meth:`choose_envs`), each with its hint."""
        t0 = time.perf_counter()
        new_ids = [c.env_id for c in candidates if c.admitted and c.env_id]
        chosen = self.choose_envs(new_ids, rng)
        if self.adaptive is not None:  # each pool environment at a level of its window
            chosen = [self.adaptive.instance(m, rng) for m in chosen]
        hinted = self.config.designs  # a fixed pool has no hint writer: unhinted plays only
        if hinted:
            self._phase(f"writing hints for {sum(1 for m in chosen if not m.hint)} environments")
        playable = [self._playable(m, seed * 17 + n, hinted=hinted) for n, m in enumerate(chosen)]
        record.timings["hint_s"] = time.perf_counter() - t0
        record.data["hint_fallbacks_total"] = int(getattr(self.stage, "hint_fallbacks", 0))
        return chosen, playable

    def plays_per_env(self, envs: int) -> int:
        """Plays of each kind per environment this iteration: ``plays_per_condition``, or more
        when fewer than ``envs_per_iteration`` environments were chosen (a small pool), so
        that an iteration trains on about ``envs_per_iteration x plays_per_condition``
        unhinted episodes however many environments the pool holds."""
        cfg = self.config
        return max(cfg.plays_per_condition, cfg.envs_per_iteration * cfg.plays_per_condition // max(envs, 1))

    def play(self, playable: Sequence[PlayableEnv], seed: int, record: IterationRecord) -> RegretMeasurement:
        """Every chosen environment played hinted and unhinted; stats recorded, hung ones retired."""
        cfg = self.config
        hinted = cfg.designs
        snapshot = f"step-{self.iteration}"
        t0 = time.perf_counter()
        k = self.plays_per_env(len(playable))
        self._phase(f"playing {len(playable)} environments x {(2 if hinted else 1) * k} episodes")
        measurement = self.estimator.measure(playable, seed=seed, hinted=hinted, k=k)
        record.timings["rollout_s"] = time.perf_counter() - t0
        for est in measurement.estimates:
            if est.measured:
                self.store.record_stats(est.env_id, est.stats(snapshot))
                if self.stage is not None:
                    self.stage.remember(est.env_id, win_rate=est.win_rate, regret=est.regret)
            elif not hinted and est.played:
                self.store.record_stats(est.env_id, est.unhinted_stats(snapshot))
        # a hung environment is blacklisted (the reference's rule): never chosen again
        hung = [e.env_id for e in measurement.estimates if e.hung]
        for env_id in hung:
            self.store.set_status(env_id, EnvStatus.retired)
        record.data["retired_hung"] = hung
        if self.adaptive is not None:  # the rule sees every unhinted play's result, every rank's
            mine = self.adaptive.outcomes((e.env_id, [is_win(r) for r in e.unhinted_returns])
                                          for e in measurement.estimates)
            everyone = [mine]
            if self.world_size > 1:
                from accelerate.utils import gather_object

                everyone = gather_object([mine])
            record.data["adaptive"] = self.adaptive.apply(o for rank in everyone for o in rank)
            record.data["adaptive_plays"] = {"this_rank": sum(len(w) for _, _, w in mine),
                                             "all_ranks": sum(len(w) for rank in everyone for _, _, w in rank)}
        return measurement

    def reward(self, candidates: Sequence[DesignedCandidate], chosen: Sequence[EnvMetadata],
               measurement: RegretMeasurement, record: IterationRecord) -> list[PolicySample]:
        """Both roles' samples with their rewards; the iteration's numbers into ``record``."""
        by_id = {e.env_id: e for e in measurement.estimates}
        cfg = self.config
        samples = (designer_samples(candidates, by_id, record.data, config=cfg, plugins=self.plugins)
                   + agent_samples(measurement, record.data, config=cfg, plugins=self.plugins))
        record_designs(self.stage, candidates, by_id, cfg.reward, record.data)
        self._summarise(record, candidates, chosen, measurement)
        self.archive.record_designs(record.iteration, candidates)
        self.archive.record_episodes(record.iteration, measurement.episodes)
        return samples

    def update(self, samples: Sequence[PolicySample], record: IterationRecord) -> StepReport:
        """One GRPO step of the shared policy on both roles' samples (the learner's)."""
        self._phase("updating the policy")
        release = getattr(self.policy, "release", None)
        if release is not None:
            release()  # no key/value cache computed by these weights may outlive them
        return_freed_memory()  # what the rollouts freed, before the update's own peak
        t0 = time.perf_counter()
        report = self.learner.step(samples)
        record.timings["update_s"] = time.perf_counter() - t0
        return_freed_memory()
        stats = report.update
        record.data["samples"] = dict(report.fill)
        record.data["train"] = stats.to_json()
        # the evidence of a real policy update: samples with signal, gradient, weight change
        record.data["update"] = {
            "nonzero_advantages": report.fill["nonzero_advantages"],
            "skipped": stats.skipped,
            "grad_norm": stats.grad_norm,
            "param_delta_l2": report.param_delta_l2,
            "param_delta_max": report.param_delta_max,
        }
        return report

    def _summarise(
        self, record: IterationRecord, candidates: Sequence[DesignedCandidate], chosen: Sequence[EnvMetadata],
        measurement: RegretMeasurement,
    ) -> None:
        n = len(candidates)
        stage_pass: Counter[str] = Counter()
        for c in candidates:
            stage_pass.update(set(c.stages_passed))
        ests = [e for e in measurement.estimates if e.measured]
        # without hinted plays (a fixed pool) nothing is `measured`: rates come from unhinted plays
        played = ests if self.config.designs else [e for e in measurement.estimates if e.played]
        eps = measurement.episodes
        pool = self.store.find(domain=self.config.domain, status=EnvStatus.admitted)
        by_skill: dict[str, int] = defaultdict(int)
        for m in pool:
            by_skill[m.skill] += 1
        difficulties = [m.difficulty for m in chosen if m.difficulty is not None]
        levels: dict[str, set[float]] = defaultdict(set)  # distinct unhinted returns per environment
        for ep in eps:
            if not ep.spec.hinted:
                levels[ep.spec.env.env_id].add(round(ep.episode_return, 6))
        record.data.update(
            designed=n,
            valid=sum(c.valid for c in candidates),
            admitted=sum(c.admitted for c in candidates),
            admission_rate=(sum(c.admitted for c in candidates) / n) if n else None,
            admission_by_stage={k: v / n for k, v in sorted(stage_pass.items())} if n else {},
            rejected_at=dict(Counter(c.failed_stage for c in candidates if c.failed_stage)),
            envs_played=len(measurement.estimates),
            envs_measured=len(ests),
            episodes=len(eps),
            env_steps=sum(e.turns for e in eps),
            regret_mean=sum(e.regret for e in ests) / len(ests) if ests else None,
            regret_max=max((e.regret for e in ests), default=None),
            win_rate=sum(e.win_rate for e in played) / len(played) if played else None,
            hinted_win_rate=sum(e.hinted_win_rate for e in ests) / len(ests) if ests else None,
            solve_rate=sum(e.solve_rate for e in played) / len(played) if played else None,
            return_hinted=sum(e.mean_hinted for e in ests) / len(ests) if ests else None,
            return_unhinted=sum(e.mean_unhinted for e in played) / len(played) if played else None,
            measured_difficulty=1.0 - sum(e.win_rate for e in played) / len(played) if played else None,
            declared_difficulty=sum(difficulties) / len(difficulties) if difficulties else None,
            hung_episodes=sum(e.hung for e in eps),
            failed_episodes=sum(e.error is not None and not e.hung for e in eps),
            mean_turns=sum(e.turns for e in eps) / len(eps) if eps else None,
            pool_size=len(pool),
            pool_by_skill=dict(sorted(by_skill.items())),
            skills=self.skills_for(record.iteration),
            per_env={e.env_id: {"regret": e.regret if e.measured else None, "win_rate": e.win_rate,
                                "reward_levels": len(levels.get(e.env_id, ()))} for e in played},
        )
        self.episodes_played += len(eps)
        self.env_steps += sum(e.turns for e in eps)
        record.timings["engine_s"] = self.engine.last_stats.engine_s
        record.timings["generate_s"] = self.engine.last_stats.generate_s
        record.timings["env_s"] = self.engine.last_stats.env_s

    # --- after the update -----------------------------------------------------------------

    def finish(self, record: IterationRecord) -> None:
        """After the update: registration, metrics, the periodic evaluation, the checkpoint."""
        self.iteration = record.iteration
        t0 = time.perf_counter()
        if self.config.register_admitted:
            from spade_core.registry import register

            reg = register(self.store, seeds=False)
            record.data["registered"] = reg.stored
        record.timings["register_s"] = time.perf_counter() - t0
        self.metrics.write(record.to_json())
        self.records.append(record)
        self.evaluate_now()
        if self.learning is not None:
            self.learning.note_update(record.iteration, record.to_json())
            self.learning.write()
            self.measure_learning()
        d = record.data
        self.console.log(
            f"iteration {record.iteration}: designed {d.get('designed')} admitted {d.get('admitted')} "
            f"played {d.get('envs_played')} envs | regret {_fmt(d.get('regret_mean'))} "
            f"win rate {_fmt(d.get('win_rate'))} | loss {_fmt(d['train'].get('loss'))} "
            f"grad norm {_fmt(d['update']['grad_norm'])} weight change {_fmt_e(d['update']['param_delta_l2'])} "
            f"({d['update']['nonzero_advantages']} samples with signal) | {record.timings.get('collect_s', 0):.0f}s "
            f"collect, {record.timings.get('update_s', 0):.0f}s update"
        )
        cfg = self.config
        if record.iteration % cfg.checkpoint_every == 0 or record.iteration == cfg.iterations:
            self.save_checkpoint()
        if self._progress is not None:
            self._progress.advance(self._task)

    def save_checkpoint(self) -> Path:
        """``checkpoints/checkpoint-<iteration>``: the learner's part (every process), then
        ours: iteration, config fingerprint and the store (this process's, in
        ``rank-<r>`` for ranks above 0), whose state file is written last."""
        checkpoint = self.root_dir / CHECKPOINTS / f"checkpoint-{self.iteration}"
        self._status(f"saving {checkpoint.name}", iteration_line=False)
        self.learner.save(checkpoint)
        mine = checkpoint / rank_folder(self.rank)
        mine.mkdir(parents=True, exist_ok=True)
        _copy_sqlite(self.store_path, mine / STORE_FILE)
        state = {"iteration": self.iteration, "fingerprint": self.config.fingerprint(), "world_size": self.world_size}
        if self.adaptive is not None:
            state["adaptive"] = self.adaptive.state()
        (mine / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
        return checkpoint

    # --- the whole run ----------------------------------------------------------------------

    def run(self, *, resume: bool = False) -> list[IterationRecord]:
        """Set up (or resume) and iterate up to ``config.iterations``; returns this call's records."""
        self.setup(resume=resume)
        if self.iteration >= self.config.iterations:
            self.console.log(f"nothing to do: the run already has {self.iteration} iterations")
            self.close()
            return []
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeElapsedColumn())
        try:
            with Progress(*columns, console=self.console, transient=False) as progress:
                self._progress = progress
                self._task = progress.add_task("starting", total=self.config.iterations, completed=self.iteration)
                if self.learning is not None:  # the constant and the control, or what a resumed run had
                    self._status("measuring the best constant policy and the control", iteration_line=False)
                    self.learning.start(resumed_at=self.iteration if resume else None)
                if self.iteration == 0:
                    self.evaluate_now()  # the initial policy, the point every run starts from
                    self.measure_learning()
                while self.iteration < self.config.iterations:
                    self.iterate()
        finally:
            self._progress = None
            self.close()
        return self.records

    def close(self) -> None:
        for obj in (getattr(self, "backend", None), getattr(self, "stage", None)):
            if obj is not None and obj is not self._env_backend and hasattr(obj, "close"):
                obj.close()
        if getattr(self, "metrics", None) is not None:
            self.metrics.close()
        if self.store is not None:
            self.store.close()
            self.store = None


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def _fmt_e(v: Any) -> str:
    return "-" if v is None else f"{v:.2e}"
