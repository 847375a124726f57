"""The one validated configuration of a self-play run (``[selfplay]`` in TOML), with presets.

Resolution order, later wins: the presets (``presets/<name>.toml`` in this package; a
base, then any ablations on top: ``--preset tiny --preset baseline``), the ``[selfplay]``
table of the user's file, then ``--set key.path=value`` overrides.
"""

from __future__ import annotations

import json
import tomllib
import warnings
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from spade_core.config_file import merge_tables

from .distributed.settings import RolloutExecutorSettings
from .errors import ConfigError
from .rewards import DesignerRewardSpec, DesignerRewardVariant, Plateau

if TYPE_CHECKING:
    from spade_core.sandbox_settings import SandboxSettings


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSettings(_Section):
    """Which policy to train: ``embedded`` (SmolLM2-135M-Instruct shipped in a package),
    ``tiny`` (a 2-layer model built in-process; tests), or a local path / hub id."""

    source: str = "embedded"
    gguf_file: str | None = None
    device: str = "cpu"
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    #: torch intra-op threads of this process (``None``: torch's default, one per core).
    #: ``"auto"`` chooses before each phase: every core when the rest of the machine is
    #: nearly idle, one when it is busy (idle-spinning OpenMP workers then cost more than
    #: the second core gives; measured in docs/trainer.md; see :mod:`spade_trainer.threads`).
    threads: Annotated[int, Field(ge=1)] | Literal["auto"] | None = None


class GenerationSettings(_Section):
    backend: Literal["transformers", "vllm"] = "transformers"
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1)
    temperature: float = Field(default=1.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    #: The agent's reply budget (its one home). The designer's budgets live in the designer
    #: table: ``[designer.sampling] max_new_tokens`` and ``[designer.hint] max_new_tokens``,
    #: which a run overrides in ``[selfplay.designer]`` (:func:`~.designer_stage.designer_table_of`).
    agent_max_new_tokens: int = Field(default=128, ge=1)
    episode_token_budget: int = Field(default=2048, ge=16)
    #: Cap on turns per episode (environments may declare fewer).
    max_turns: int = Field(default=25, ge=1)
    #: Text every agent reply starts with, given instead of sampled and never trained (say
    #: ``"\\boxed{"`` for a domain whose actions are boxed); "" for none (the reference).
    agent_prefill: str = Field(default="", max_length=64)
    #: End each agent reply at its first complete action (``\\boxed{...}``, ``</answer>``):
    #: what follows is neither sent nor trained, and sampling stops there.
    cut_at_action: bool = False


class RewardSettings(_Section):
    """Both roles' rewards. The defaults are the reference recipe (REFERENCE.md); every
    setting that departs from it is listed in docs/trainer.md with the value that restores it."""

    variant: DesignerRewardVariant = DesignerRewardVariant.blend
    regret_scale: float = Field(default=0.15, gt=0)
    regret_weight: float = 0.4
    plateau_weight: float = 0.6
    plateau: tuple[float, float, float, float] = (0.15, 0.4, 0.6, 0.85)
    invalid_reward: float = 0.0
    #: ``reject``: only designs that passed are trained (the reference's rejection sampling).
    #: ``shape``: invalid candidates are trained too, with the graded ``invalid_env`` penalty
    #: (a CPU policy that designs nothing valid has no other designer signal); they are
    #: centred apart from the valid designs and never outrank one (:mod:`.samples`).
    invalid_designs: Literal["reject", "shape"] = "reject"
    #: What the plateau reads: ``mean_return`` (the reference: mean unhinted return) or
    #: ``solve_rate`` (share of unhinted plays won outright).
    win_rate: Literal["mean_return", "solve_rate"] = "mean_return"
    #: Multiplier of designer advantages: ``"auto"`` is the reference's env_reward_scale,
    #: ``min(designer_scale_max, agent samples / designer samples x regeneration interval)``
    #: (one iteration here); a number fixes it.
    designer_scale: Annotated[float, Field(gt=0)] | Literal["auto"] = "auto"
    designer_scale_max: float = Field(default=50.0, gt=0)
    #: Base reward of a design whose environment hung in a play (it is also retired);
    #: ``"from_plays"`` rewards it from its remaining plays, as the reference's blend does.
    designer_hang_penalty: float | Literal["from_plays"] = -0.5
    #: Weights handed to shaping plugins (``context.extra["shaping"]``).
    shaping: dict[str, float] = Field(
        default_factory=lambda: {"invalid_penalty": 0.5, "novelty_weight": 0.1, "well_formed_weight": 0.1}
    )

    def spec(self) -> DesignerRewardSpec:
        lo, blo, bhi, hi = self.plateau
        return DesignerRewardSpec(
            variant=self.variant,
            regret_scale=self.regret_scale,
            regret_weight=self.regret_weight,
            plateau_weight=self.plateau_weight,
            plateau=Plateau(lo, blo, bhi, hi),
            invalid_reward=self.invalid_reward,
        )


class OptimSettings(_Section):
    #: 0 runs everything but moves no weight (AdamW at learning rate 0 leaves them bit for
    #: bit): the whole learning-rate-0 control of a run.
    learning_rate: float = Field(default=1e-6, ge=0)
    micro_batch: int = Field(default=2, ge=1)
    max_grad_norm: float = Field(default=1.0, gt=0)


class SandboxOverrides(_Section):
    """``[selfplay.sandbox]``: what a run changes of ``[spade.sandbox]``
    (:class:`spade_core.sandbox_settings.SandboxSettings`); a key left out keeps that
    table's value. The result is the run's one sandbox setting: its rollouts, its designer's
    validation and its periodic evaluation run under it (:meth:`applied_to`)."""

    #: Deadline of one step; a step past it is a hang (penalty -0.5).
    step_timeout_s: float = Field(default=30.0, gt=0)
    memory_mb: int | None = Field(default=None, ge=32)
    cpu_seconds: int | None = Field(default=None, ge=1)
    backend: str | None = None
    allow_insecure: bool | None = None

    def applied_to(self, base: SandboxSettings) -> SandboxSettings:
        """``base`` with this table's keys."""
        return base.override(
            memory_mb=self.memory_mb, cpu_seconds=self.cpu_seconds, backend=self.backend, allow_insecure=self.allow_insecure
        )


class EvalSettings(_Section):
    """An evaluation of the policy every ``every`` iterations (``[selfplay.eval]``): a suite
    registered through ``spade_register_eval_suites`` (``spade eval --list``), played with the
    policy being trained, each result a line of the run's ``evals.jsonl`` (what ``spade
    compare`` reads) with the iteration and the environment steps the run had taken."""

    #: Iterations between evaluations; 0 turns it off.
    every: int = Field(default=0, ge=0)
    #: Also evaluate the initial policy before the first iteration (a fresh run only).
    at_start: bool = True
    suite: str = "registry"
    #: Episodes per environment or task of the suite (``spade eval --size``).
    size: int = Field(default=2, ge=1)
    #: First episode seed; the same every evaluation, so every point measures the same episodes.
    seed: int = 0
    #: The suite's own options (``spade eval -o KEY=VALUE``), e.g. ``{ids = "..."}`` for ``registry``.
    options: dict[str, Any] = Field(default_factory=dict)
    #: Reply budget per turn (``None``: ``generation.agent_max_new_tokens``).
    max_new_tokens: int | None = Field(default=None, ge=1)
    #: Turn cap per episode on top of the suite's own (``None``: the suite's).
    max_turns: int | None = Field(default=None, ge=1)
    #: 0 is greedy, so two evaluations of the same weights agree.
    temperature: float = Field(default=0.0, ge=0)
    concurrency: int = Field(default=16, ge=1)


class AdaptiveSettings(_Section):
    """The adaptive fixed-pool baseline (``[selfplay.adaptive]``, RLVE-style; needs
    ``fixed_pool``): each pool environment's knobs follow the agent's measured success along
    its difficulty ladder (the knobs' declared ``HARDER`` directions, easiest first) by the
    rule of :class:`~spade_trainer.adaptive.AdaptiveDifficulty`; no designer, no LLM."""

    enabled: bool = False
    #: Steps of each environment's ladder from its easiest to its hardest knob settings.
    levels: int = Field(default=6, ge=2, le=64)
    #: Levels a play is drawn from: the top and up to ``window - 1`` below it.
    window: int = Field(default=4, ge=1)
    #: Success at the top, over at least ``min_attempts`` plays, that moves it up / down.
    raise_at: float = Field(default=0.9, gt=0.0, le=1.0)
    lower_at: float = Field(default=0.1, ge=0.0, lt=1.0)
    min_attempts: int = Field(default=16, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> AdaptiveSettings:
        if not self.lower_at < self.raise_at:
            raise ValueError(f"lower_at ({self.lower_at}) must be below raise_at ({self.raise_at})")
        return self


class LearningSettings(_Section):
    """The run's learning curve on held-out instances (``[selfplay.learning]``,
    :mod:`spade_trainer.learning`): the policy's success on ``target`` before the first
    iteration and after every ``every`` iterations (and the last), beside a learning-rate-0
    control and the best constant policy, written to ``RUN_DIR/learning.json``."""

    #: The environment measured, ``NAME[:KNOB=VALUE,...]`` (a seed or stored environment,
    #: at a knob setting: ``higher_lower:CANDIDATES=15,GUESSES=4``); "" measures nothing.
    target: str = ""
    #: Iterations between evaluations (the initial policy and the last iteration always).
    every: int = Field(default=1, ge=1)
    #: Held-out instances per evaluation (seeds from 10**9 up, never trained on).
    episodes: int = Field(default=96, ge=1, le=100_000)
    #: Held-out episodes played together (the policy's key/value cache holds a batch's
    #: conversations: fewer at a time, less memory, a little slower).
    batch: int = Field(default=48, ge=1)
    #: ``eval``: the initial policy evaluated at every point with that point's sampling
    #: seed (what the run at learning rate 0 measures); ``none``: no control.
    control: Literal["eval", "none"] = "eval"
    #: Most replies read from the instances (listed numbers, solution actions) tried as the
    #: best constant policy; the policy's own most frequent replies are added after each
    #: evaluation.
    constant_candidates: int = Field(default=256, ge=1)
    #: A name for the run in summaries and plots (an arm: ``fixed``, ``spade``, ``adaptive``).
    label: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.target.strip())


class LoggingSettings(_Section):
    tensorboard: bool = False
    wandb: bool = False
    wandb_project: str = "spade"


#: Keys of ``[selfplay.generation]`` that moved into the designer table: (old, (table, key)).
_MOVED_BUDGETS = (("designer_max_new_tokens", ("sampling", "max_new_tokens")),
                  ("hint_max_new_tokens", ("hint", "max_new_tokens")))


def move_designer_budgets(data: Any, where: str) -> Any:
    """``data`` (a ``[selfplay]`` table, or one layer of it) with the designer's reply budgets
    moved from ``generation`` (``designer_max_new_tokens``, ``hint_max_new_tokens``: their old,
    second home) into the designer table, with a ``FutureWarning`` naming the new key. Each
    layer is moved before the layers are merged, so an old key in a later layer still wins
    over a budget of an earlier one; one layer that sets both homes to different values is
    refused (``ValueError``). Anything that is not a table is left to the fields' validation."""
    if not isinstance(data, dict) or not isinstance(data.get("generation"), dict):
        return data
    generation = dict(data["generation"])
    moved = [(old, new) for old, new in _MOVED_BUDGETS if old in generation]
    designer = data.get("designer", {})
    if not moved or not isinstance(designer, dict):
        return data
    designer = dict(designer)
    for old, (table, key) in moved:
        value = generation.pop(old)
        section = designer.get(table, {})
        if not isinstance(section, dict):
            return data
        if key in section and section[key] != value:
            raise ValueError(f"{where}: generation.{old} = {value!r} and designer.{table}.{key} = {section[key]!r} "
                             f"set the same reply budget twice: keep only designer.{table}.{key}")
        designer[table] = {**section, key: value}
        warnings.warn(f"{where}: [selfplay.generation] {old} is deprecated: write it as [selfplay.designer.{table}] "
                      f"{key} (the designer's reply budgets have one home, the designer table)", FutureWarning,
                      stacklevel=3)
    return {**data, "generation": generation, "designer": designer}


class SelfPlayConfig(_Section):
    """Everything a self-play run needs; see the presets for worked examples."""

    run_dir: Path = Path("runs/selfplay")
    iterations: int = Field(default=100, ge=1)
    seed: int = 0
    domain: str = "games"
    #: Skills to design for; empty means all of the domain's skills.
    skills: list[str] = Field(default_factory=list)
    #: Skills designed for per iteration, taken round-robin.
    skills_per_iteration: int = Field(default=3, ge=1)
    designs_per_skill: int = Field(default=4, ge=1)
    #: Environments the agent plays per iteration (new admissions first, then the pool).
    envs_per_iteration: int = Field(default=24, ge=1)
    #: K: hinted and unhinted plays per environment for regret.
    plays_per_condition: int = Field(default=16, ge=1)
    train_on_hinted: bool = False
    import_seed_pool: bool = True
    #: No designer (the fixed-environment baseline): the agent trains with GRPO on the pool
    #: as it is (the seed pool and ``pool_from``); nothing is designed, no hint is written,
    #: and only unhinted plays are made (no regret is measured).
    fixed_pool: bool = False
    #: The environments the run starts from, instead of the domain's whole seed pool:
    #: ``NAME[:KNOB=VALUE,...]`` each (:mod:`spade_trainer.envrefs`), seeds of ``domain`` or
    #: environments of the configured store, at a knob setting (stored as a parameter edit
    #: of the environment as written). Empty: the seed pool (``import_seed_pool``).
    pool: list[str] = Field(default_factory=list)
    #: A store (``store.db`` of a run, or any EnvStore SQLite file) whose admitted
    #: environments of ``domain`` join the run's pool at setup.
    pool_from: Path | None = None
    #: Train the designer role. ``false``: designs are made, admitted, played and rewarded
    #: (the rewards are logged), but no designer sample enters the update.
    train_designer: bool = True
    checkpoint_every: int = Field(default=10, ge=1)
    register_admitted: bool = True
    #: Episodes per environment, hinted and unhinted each, whose transcripts the run keeps
    #: (``transcripts.jsonl``, beside every designed candidate in ``designs.jsonl``; 0 keeps
    #: no transcripts). Both files are bounded (:mod:`spade_trainer.run_archive`).
    transcripts_per_env: int = Field(default=2, ge=0, le=64)
    model: ModelSettings = Field(default_factory=ModelSettings)
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    reward: RewardSettings = Field(default_factory=RewardSettings)
    optim: OptimSettings = Field(default_factory=OptimSettings)
    sandbox: SandboxOverrides = Field(default_factory=SandboxOverrides)
    #: Where environments are stepped: the local sandbox pool, or sandbox actors on Ray.
    rollout: RolloutExecutorSettings = Field(default_factory=RolloutExecutorSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)
    adaptive: AdaptiveSettings = Field(default_factory=AdaptiveSettings)
    learning: LearningSettings = Field(default_factory=LearningSettings)
    #: Raw ``[designer]``-style options handed to the designer (validated there).
    designer: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _designer_budgets_moved(cls, data: Any) -> Any:
        return move_designer_budgets(data, "the configuration")

    @model_validator(mode="after")
    def _consistent(self) -> SelfPlayConfig:
        if self.generation.backend == "vllm" and self.model.device == "cpu":
            raise ValueError("generation.backend = 'vllm' needs a GPU: set model.device = 'cuda'")
        if self.fixed_pool:
            if not self.import_seed_pool and self.pool_from is None and not self.pool:
                raise ValueError("fixed_pool = true trains on a pool that is not there: keep import_seed_pool = "
                                 "true or give pool_from (a store whose admitted environments form the pool)")
            if self.train_on_hinted:
                raise ValueError("fixed_pool = true writes no hints (there is no designer), so train_on_hinted "
                                 "must be false")
        elif self.adaptive.enabled:
            raise ValueError("adaptive.enabled = true adapts the fixed pool's knobs: it needs fixed_pool = true "
                             "(lay the adaptive preset on a base: --preset tiny --preset adaptive)")
        return self

    @property
    def designs(self) -> bool:
        """Whether iterations design environments (not under ``fixed_pool``)."""
        return not self.fixed_pool

    def designer_samples_per_iteration(self, repair_attempts: int) -> int:
        """Designer samples an iteration trains on at most: one per candidate under
        rejection sampling (a candidate has at most one passing attempt), every attempt of
        every candidate under ``invalid_designs = "shape"`` (``1 + repair_attempts`` each: the
        run's designer table says how many, :attr:`.plan.RunPlan.designer`); none under
        ``fixed_pool`` or ``train_designer = false``."""
        if not self.designs or not self.train_designer:
            return 0
        candidates = self.skills_per_iteration * self.designs_per_skill
        if self.reward.invalid_designs == "reject":
            return candidates
        return candidates * (1 + repair_attempts)

    @property
    def agent_samples_per_iteration(self) -> int:
        """Agent episodes trained per iteration in the usual case (``envs_per_iteration``)."""
        return self.envs_per_iteration * self.plays_per_condition * (2 if self.train_on_hinted else 1)

    def expected_samples(self, repair_attempts: int) -> int:
        """The most samples one iteration can bring, which the update is sized for so that
        none is dropped: every design admitted means that many new environments are played
        (new admissions are played even beyond ``envs_per_iteration``)."""
        designed = self.skills_per_iteration * self.designs_per_skill if self.designs else 0
        envs = max(self.envs_per_iteration, designed)
        agent = envs * self.plays_per_condition * (2 if self.train_on_hinted else 1)
        return self.designer_samples_per_iteration(repair_attempts) + agent

    @property
    def designer_reward_scale(self) -> float:
        """The multiplier of designer advantages (``reward.designer_scale``). The reference's
        ``min(50, actor samples / designer samples x regeneration interval)`` (32 in its 30B
        recipe) with new environments every iteration: interval 1, and the samples counted
        per iteration (agent episodes, design candidates)."""
        if self.reward.designer_scale != "auto":
            return float(self.reward.designer_scale)
        ratio = self.agent_samples_per_iteration / (self.skills_per_iteration * self.designs_per_skill)
        return min(self.reward.designer_scale_max, ratio * 1)

    def fingerprint(self) -> str:
        """What must not change between a checkpoint and its resumption (JSON)."""
        # Where environments run does not change results, so `rollout` may change on resume.
        keep = self.model_dump(mode="json", exclude={"iterations", "run_dir", "logging", "checkpoint_every", "rollout",
                                                     "transcripts_per_env"})
        return json.dumps(keep, sort_keys=True)


#: Sub-folder of ``presets/`` holding the ablations: each changes a base preset only where
#: the ablation must (``tests/trainer/test_presets.py`` checks the keys each one changes).
ABLATIONS = "ablations"


def _preset_files(folder: Any) -> list[str]:
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def base_preset_names() -> list[str]:
    """Presets that describe a whole run (model, sizes, budgets): ``tiny``, ``quickstart``, ``gpu``."""
    return _preset_files(resources.files("spade_trainer") / "presets")


def ablation_names() -> list[str]:
    """Presets laid over a base (the fixed-pool baseline and the paper's ablations)."""
    return _preset_files(resources.files("spade_trainer") / "presets" / ABLATIONS)


def preset_names() -> list[str]:
    return sorted([*base_preset_names(), *ablation_names()])


def split_presets(presets: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """The preset names of ``--preset`` values, in order; ``"tiny+baseline"`` is two."""
    if presets is None:
        return []
    items = [presets] if isinstance(presets, str) else list(presets)
    return [name.strip() for item in items for name in item.split("+") if name.strip()]


def _preset_table(name: str) -> dict[str, Any]:
    bases, ablations = base_preset_names(), ablation_names()
    if name in bases:
        file = resources.files("spade_trainer") / "presets" / f"{name}.toml"
    elif name in ablations:
        file = resources.files("spade_trainer") / "presets" / ABLATIONS / f"{name}.toml"
    else:
        raise ConfigError(f"unknown preset {name!r} (bases: {', '.join(bases)}; ablations on top of a base: "
                          f"{', '.join(ablations)})")
    return dict(tomllib.loads(file.read_text(encoding="utf-8")).get("selfplay", {}))


def preset_table(presets: str | list[str] | tuple[str, ...] | None) -> dict[str, Any]:
    """The ``[selfplay]`` table of presets laid in order: at most one base, first, then
    ablations (each a separate change, so several may be combined)."""
    names = split_presets(presets)
    bases = [n for n in names if n in base_preset_names()]
    if len(bases) > 1:
        raise ConfigError(f"presets {', '.join(bases)} are each a whole run: choose one base preset "
                          f"and lay ablations ({', '.join(ablation_names())}) on top")
    if bases and names[0] != bases[0]:
        raise ConfigError(f"the base preset {bases[0]!r} must come first, before the ablations laid on it "
                          f"(--preset {bases[0]} --preset {names[0]})")
    data: dict[str, Any] = {}
    for name in names:
        data = merge_tables(data, _preset_table(name))
    return data


def parse_override(item: str) -> tuple[list[str], Any]:
    """``a.b=value`` -> (["a", "b"], value); the value is read as TOML, else as a string."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} must look like key.path=value")
    key, raw = item.split("=", 1)
    path = [p.strip() for p in key.split(".") if p.strip()]
    if not path:
        raise ConfigError(f"override {item!r} has an empty key")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return path, value


def _moved(layer: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        return move_designer_budgets(layer, where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def load_selfplay_config(
    *, preset: str | list[str] | tuple[str, ...] | None = None, path: str | Path | None = None,
    overrides: list[str] | None = None,
) -> SelfPlayConfig:
    """Build and validate the run configuration (see module docstring); ``preset`` is one
    name, ``"base+ablation"``, or a list of names laid in order."""
    names = split_presets(preset)
    data: dict[str, Any] = preset_table(names)
    origin = f"preset {'+'.join(names)!r}" if names else "defaults"
    if path is not None:
        from spade_core.config_file import read_config_file  # the one reader of configuration files

        tables = read_config_file(path)
        file, table = tables.path, tables.sections.get("selfplay")
        if not isinstance(table, dict):
            raise ConfigError(f"{file}: no [selfplay] table")
        data = merge_tables(data, _moved(table, str(file)))
        origin += f" + {file}"
    for item in overrides or []:
        keys, value = parse_override(item)
        nested: dict[str, Any] = {keys[-1]: value}
        for k in reversed(keys[:-1]):
            nested = {k: nested}
        data = merge_tables(data, _moved(nested, f"--set {item}"))
    try:
        return SelfPlayConfig.model_validate(data)
    except ValidationError as exc:
        lines = [f"invalid self-play configuration ({origin}):"]
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            lines.append(f"  {loc}: {err['msg']}")
        raise ConfigError("\n".join(lines)) from None
