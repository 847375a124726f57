"""What a self-play configuration would run, and what this machine lacks for it, found
without loading a model or starting anything (``spade selfplay --check``).

:func:`plan_run` is also how :meth:`~.selfplay.SelfPlayRun.setup` derives the learner's
settings, so a check reports exactly what a run would use. It fails with a
:class:`~.errors.ConfigError` on settings that cannot run anywhere (a designer table the
designer rejects, an evaluation suite that is not installed); :func:`machine_problems` lists what
this machine lacks for the configuration (a CUDA device, vLLM, a package), so a GPU
script can stop in seconds instead of after installing and loading a model.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from .config import SelfPlayConfig
from .errors import ConfigError
from .learner import VLLMSettings
from .policy_update import UpdateSettings

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.plugins import SpadePlugins
    from spade_designer.config import DesignerConfig

#: Sub-folder of the run folder that holds the checkpoints.
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class RunPlan:
    """A validated configuration and the learner it implies."""

    config: SelfPlayConfig
    #: The GRPO step's settings.
    update: UpdateSettings
    #: Recompute activations in the backward pass (on a GPU: memory; on a CPU it only costs time).
    activation_checkpointing: bool
    #: How generation reaches vLLM; ``None`` with ``generation.backend = "transformers"``.
    vllm: VLLMSettings | None
    #: The run's designer table, validated (:func:`~.designer_stage.designer_config_of`).
    designer: DesignerConfig

    @property
    def designer_samples(self) -> int:
        """Designer samples an iteration trains on at most (the designer table's repairs)."""
        return self.config.designer_samples_per_iteration(self.designer.repair_attempts)

    @property
    def expected_samples(self) -> int:
        """The most samples one iteration can bring (:meth:`.config.SelfPlayConfig.expected_samples`)."""
        return self.config.expected_samples(self.designer.repair_attempts)

    def rows(self) -> list[tuple[str, str]]:
        """``(what, value)`` lines describing the run, for a table."""
        c, g = self.config, self.config.generation
        generation = g.backend + (f" ({g.vllm_mode}, {g.vllm_gpu_memory_utilization:.0%} of GPU memory)"
                                  if g.backend == "vllm" else "")
        if c.designs:
            designs = f"{c.designs_per_skill} for each of {c.skills_per_iteration} skill(s)"
            plays = f"{c.envs_per_iteration} envs x {c.plays_per_condition} hinted + {c.plays_per_condition} unhinted"
        else:
            designs = "none: fixed pool (" + " + ".join(
                [*(["the seed pool"] if c.import_seed_pool else []), *([str(c.pool_from)] if c.pool_from else [])]) + ")"
            plays = f"{c.envs_per_iteration} envs x {c.plays_per_condition} unhinted (no regret measured)"
            if c.adaptive.enabled:
                a = c.adaptive
                designs += (f"; adaptive: each environment's declared knobs on a ladder of {a.levels} levels, "
                            f"window {a.window}, up at >= {a.raise_at:g} / down at <= {a.lower_at:g} of "
                            f"{a.min_attempts}+ plays at the top, from the bottom")
        return [
            ("model", f"{c.model.source} on {c.model.device}, {c.model.dtype}"),
            ("generation", generation),
            ("iterations", f"{c.iterations} (checkpoint every {c.checkpoint_every})"),
            ("designs per iteration", designs),
            ("designer", _designer_row(c, self.designer)),
            ("episodes per iteration", plays),
            ("token budgets", f"design {self.designer.sampling.max_new_tokens}, hint "
                              f"{self.designer.hint.max_new_tokens}, agent turn {g.agent_max_new_tokens}, "
                              f"episode {g.episode_token_budget}, {g.max_turns} turns"),
            ("update", f"one GRPO step on every sample (about {self.expected_samples} per iteration), micro batch "
                       f"{self.update.micro_batch}, lr {self.update.learning_rate:g}, "
                       f"grad norm {self.update.max_grad_norm:g}"),
            ("activation checkpointing", str(self.activation_checkpointing)),
            ("rollout executor", c.rollout.executor),
            ("evaluation", _eval_row(c)),
            ("learning curve", _learning_row(c)),
            ("run folder", str(c.run_dir)),
        ]


def _designer_row(c: SelfPlayConfig, designer: DesignerConfig) -> str:
    if not c.designs:
        return "none (fixed pool)"
    parts = [f"reward {c.reward.variant.value} of {c.reward.win_rate}",
             "trained" if c.train_designer else "not trained (designs played, rewards logged)",
             f"corpus {designer.corpus}", f"memory {designer.memory}"]
    return ", ".join(parts)


def _eval_row(c: SelfPlayConfig) -> str:
    e = c.eval
    if e.every == 0:
        return "off"
    options = ", ".join(f"{k}={v}" for k, v in sorted(e.options.items()))
    return (f"{e.suite} ({options or 'no options'}) every {e.every} iteration(s)"
            f"{' and before the first' if e.at_start else ''}, size {e.size}, seed {e.seed}")


def _learning_row(c: SelfPlayConfig) -> str:
    s = c.learning
    if not s.enabled:
        return "off"
    control = "a learning-rate-0 control" if s.control == "eval" else "no control"
    return (f"{s.target}: {s.episodes} held-out instances before the first iteration and every {s.every}, "
            f"{control}, the best constant policy (RUN_DIR/learning.json)")


def plan_run(config: SelfPlayConfig, *, plugins: SpadePlugins | None = None,
             spade_config: SpadeConfig | None = None) -> RunPlan:
    """The plan of ``config``. With an evaluation configured, its suite must be one of
    ``plugins``' (default: the installed plugins). The designer's table is ``[designer]``
    of ``spade_config`` with ``[selfplay.designer]`` laid over it."""
    cfg = config
    gen = cfg.generation
    update = UpdateSettings(learning_rate=cfg.optim.learning_rate, max_grad_norm=cfg.optim.max_grad_norm,
                            micro_batch=cfg.optim.micro_batch,
                            temperature=gen.temperature if gen.temperature > 0 else 1.0)
    designer = _check_designer_table(cfg, spade_config)
    longest = max(gen.agent_max_new_tokens, designer.sampling.max_new_tokens, designer.hint.max_new_tokens)
    vllm = (VLLMSettings(mode=gen.vllm_mode, gpu_memory_utilization=gen.vllm_gpu_memory_utilization,
                         max_new_tokens=longest, temperature=update.temperature)
            if gen.backend == "vllm" else None)
    if cfg.eval.every > 0:
        from .periodic_eval import eval_suite

        if plugins is None:
            from spade_core.plugins import get_plugins

            plugins = get_plugins()
        eval_suite(cfg.eval, plugins)
    return RunPlan(cfg, update, cfg.model.device != "cpu", vllm, designer)


def _check_designer_table(cfg: SelfPlayConfig, spade_config: SpadeConfig | None = None) -> DesignerConfig:
    from .designer_stage import designer_config_of

    try:
        dcfg = designer_config_of(cfg, spade_config)
    except ValidationError as exc:
        lines = ["invalid designer table ([designer] with [selfplay.designer] over it):"]
        for err in exc.errors():
            lines.append(f"  designer.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}")
        raise ConfigError("\n".join(lines)) from None
    # the plugins' options too, now rather than when the designer is first built
    from spade_core.plugins import get_plugins

    plugins = get_plugins()
    try:
        plugins.check_options("llm_backends", dcfg.backend, {"model": dcfg.model, **dcfg.backend_options})
        if dcfg.corpus != "none":
            plugins.check_options("corpora", dcfg.corpus, dict(dcfg.corpus_options))
    except ConfigError as exc:
        raise ConfigError(f"[designer] / [selfplay.designer]: {exc}") from None
    return dcfg


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def machine_problems(config: SelfPlayConfig) -> list[str]:
    """What this machine lacks to run ``config``, one sentence each (empty: nothing)."""
    import torch

    problems: list[str] = []
    device = config.model.device
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            problems.append(f"model.device = {device!r} but torch {torch.__version__} ({build}) sees no CUDA device")
        elif config.model.dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
            problems.append("model.dtype = 'bfloat16' but this GPU does not support bfloat16 (use float16)")
    if config.generation.backend == "vllm":
        if not _installed("vllm"):
            problems.append("generation.backend = 'vllm' but vllm is not installed (pip install 'spade-trainer[vllm]')")
        else:
            from trl.import_utils import is_vllm_available

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                is_vllm_available()
            # TRL states the vLLM versions it supports in this warning
            problems.extend(f"vllm: {w.message}" for w in caught if "vLLM" in str(w.message))
    if config.model.source == "embedded":
        try:
            from spade_designer.llm.transformers_backend import default_model_path

            default_model_path()
        except Exception as exc:  # the designer's error names the package to install
            problems.append(f"model.source = 'embedded': {exc}")
    elif config.model.source != "tiny" and not Path(config.model.source).exists():
        from huggingface_hub import try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(config.model.source, "config.json")
        except ValueError:  # not a repository id at all (a path that does not exist, say)
            cached = None
        if not isinstance(cached, str):
            problems.append(f"model.source {config.model.source!r} is neither a local folder nor in the Hugging "
                            "Face cache (runs are offline: download it first)")
    if config.rollout.executor == "ray" and not _installed("ray"):
        problems.append("rollout.executor = 'ray' but ray is not installed (pip install 'spade-trainer[ray]')")
    if config.logging.tensorboard and not _installed("tensorboard"):
        problems.append("logging.tensorboard = true but tensorboard is not installed")
    if config.logging.wandb and not _installed("wandb"):
        problems.append("logging.wandb = true but wandb is not installed")
    return problems
