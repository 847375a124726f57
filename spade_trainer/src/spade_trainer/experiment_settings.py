"""The learning experiment's settings (:class:`LearnSettings`) and the curriculum's
(:class:`CurriculumSettings`), apart from the experiments so that ``spade experiment
learn``/``curriculum`` read their options' defaults from here without importing the
experiments: the defaults have this one home."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from .errors import ConfigError

GroupInstance = Literal["fresh", "shared"]
ControlMode = Literal["eval", "full", "none"]
Trainer = Literal["spade", "trl"]
#: How plots and tables name each trainer.
TRAINER_NAMES = {"spade": "spade GRPO", "trl": "TRL GRPOTrainer"}


@dataclass(frozen=True)
class LearnSettings:
    """One learning experiment (every field is a ``spade experiment learn`` option)."""

    seed: int = 0
    #: Policy updates of the trained run (and of its control).
    updates: int = 12
    eval_every: int = 4
    #: GRPO groups per update (each a set of plays of the rung).
    groups: int = 4
    #: Plays per group.
    group_size: int = 8
    #: ``fresh``: each play of a group is its own random instance (the reference resets every
    #: play without a seed); ``shared``: the plays of a group share one instance, so the group
    #: baseline compares replies, not instances.
    group_instance: GroupInstance = "fresh"
    eval_episodes: int = 96
    learning_rate: float = 2e-5
    temperature: float = 1.0
    #: Text every reply starts with (not trained); "" for none.
    prefill: str = "\\boxed{"
    cut_at_action: bool = True
    max_new_tokens: int = 16
    #: The rung's knobs.
    candidates: int = 3
    guesses: int = 2
    #: The learning-rate-0 control: ``eval`` evaluates the initial weights at every
    #: evaluation point with the trained curve's seeds (what the whole run at lr 0 measures,
    #: since AdamW at lr 0 leaves the weights bit for bit unchanged, which the tests check);
    #: ``full`` also plays and updates at lr 0 (twice the time); ``none`` skips it (the curve
    #: is then not a test).
    control: ControlMode = "eval"
    #: Who makes the trained curve's updates: ``spade`` (:class:`~.policy_update.GRPOUpdate`)
    #: or ``trl`` (TRL's ``GRPOTrainer`` with a rollout function that plays the rung; see
    #: :mod:`.experiment_trl`). The control and the constant are the same for both.
    trainer: Trainer = "spade"
    #: Where the model is trained and sampled: ``cpu`` or a CUDA device (``cuda``,
    #: ``cuda:1``). Always float32: AdamW on bfloat16 weights rounds most steps of size
    #: ~lr x 1 away, so the curve on a GPU is the same recipe, not a lower-precision one.
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_device(self.device)
        if self.updates < 1 or self.eval_every < 1:
            raise ConfigError(f"updates ({self.updates}) and eval_every ({self.eval_every}) must be >= 1")
        if self.groups < 1 or self.group_size < 2:
            raise ConfigError(f"groups must be >= 1 and group_size >= 2, got {self.groups}, {self.group_size}")
        if self.group_instance not in ("fresh", "shared"):
            raise ConfigError(f"group_instance must be 'fresh' or 'shared', got {self.group_instance!r}")
        if self.control not in ("eval", "full", "none"):
            raise ConfigError(f"control must be 'eval', 'full' or 'none', got {self.control!r}")
        if self.trainer not in TRAINER_NAMES:
            raise ConfigError(f"trainer must be 'spade' or 'trl', got {self.trainer!r}")
        if self.eval_episodes < 1 or self.eval_episodes > 100_000:
            raise ConfigError(f"eval_episodes must be in [1, 100000], got {self.eval_episodes}")
        if not 0 <= self.learning_rate < 1:
            raise ConfigError(f"learning_rate must be in [0, 1), got {self.learning_rate}")
        if not 2 <= self.candidates <= 15 or not 1 <= self.guesses <= 4:
            raise ConfigError(f"candidates must be in [2, 15] and guesses in [1, 4], got {self.candidates}, {self.guesses}")


def check_device(device: str) -> None:
    """``cpu``, ``cuda`` or ``cuda:N``, else a :class:`ConfigError` naming the value."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ConfigError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")



# -- the curriculum experiment (`spade experiment curriculum`) ----------------------------------

#: ``(name, CANDIDATES, GUESSES)`` of each evaluation level. Halving wins every instance
#: of all three; a player that guesses a random listed number consistent with the feedback
#: wins 1.00, 0.78 and 0.68 of them (:func:`~.curriculum_experiment.reference_success`), the habit the learning
#: experiment found (first listed, then the next one the way the feedback says) 1.00, 0.67
#: and 0.43.
DEFAULT_LEVELS: tuple[tuple[str, int, int], ...] = (("easy", 2, 2), ("default", 3, 2), ("hard", 7, 3))
#: The cap of the designer advantage multiplier (the reference's ``env_reward_scale``).
DESIGNER_SCALE_MAX = 50.0

Arm = Literal["fixed", "spade", "adaptive"]
ARMS = ("fixed", "spade", "adaptive")


#: What the curriculum fixes of the learning experiment's settings (none is a curriculum
#: option): each play is its own fresh instance, no learning-rate-0 control (the fixed arm
#: is what the other arms are compared with), and the project's own GRPO step (the spade
#: arm's designer samples enter that step).
FIXED_LEARN: dict[str, Any] = {"group_instance": "fresh", "control": "none", "trainer": "spade"}


def _fixed_learn() -> LearnSettings:
    return LearnSettings(**FIXED_LEARN)


@dataclass(frozen=True)
class CurriculumSettings:
    """One arm of one seed (``spade experiment curriculum`` sets all but ``temperature``,
    ``prefill``, ``cut_at_action``, ``max_new_tokens`` and ``designer_max_new_tokens``,
    which keep their defaults, and the fixed three of ``learn``).

    ``learn`` holds what the curriculum shares with the learning experiment, with its
    defaults and checks (:class:`~.experiment.LearnSettings`): ``seed``, ``updates``,
    ``eval_every``, ``groups`` (fixed and adaptive arms: GRPO groups per update; spade arm:
    children designed per update, each a GRPO group of the agent and together the designer's
    group), ``group_size`` (agent plays per group, unhinted; the spade arm also plays each
    child as often hinted), ``eval_episodes``, ``learning_rate``, ``temperature``,
    ``prefill``, ``cut_at_action``, ``max_new_tokens``, ``candidates`` and ``guesses`` (the
    rung's starting knobs: the fixed arm's throughout) and ``device``. Its other three fields
    are fixed, not options (:data:`FIXED_LEARN`): ``group_instance="fresh"``,
    ``control="none"``, ``trainer="spade"``; a ``learn`` with other values is refused.
    :meth:`of` builds the settings from flat fields, as the command and ``curriculum.json``
    name them; :meth:`to_json` writes them so.
    """

    arm: Arm = "fixed"
    #: The learning experiment's settings the curriculum uses (the fixed three at
    #: :data:`FIXED_LEARN`).
    learn: LearnSettings = field(default_factory=_fixed_learn)
    levels: tuple[tuple[str, int, int], ...] = DEFAULT_LEVELS
    #: The designer reward variant (:class:`~.rewards.DesignerRewardVariant`).
    reward: str = "blend"
    #: ``reject``: only admitted children's designer samples are trained (the reference);
    #: ``shape``: rejected replies too, at the invalid reward, never above an admitted one.
    invalid_designs: Literal["reject", "shape"] = "reject"
    #: Multiplier of designer advantages; ``None``: the reference's auto scale, agent
    #: samples / designer samples per update (capped at :data:`DESIGNER_SCALE_MAX`).
    designer_scale: float | None = None
    #: Token budget of a designer reply (the designer's ``parameter_max_new_tokens``).
    designer_max_new_tokens: int = 24

    def __post_init__(self) -> None:
        from .rewards import DesignerRewardVariant

        if self.arm not in ARMS:
            raise ConfigError(f"arm must be 'fixed', 'spade' or 'adaptive', got {self.arm!r}")
        if not isinstance(self.learn, LearnSettings):
            raise ConfigError(f"learn must be a LearnSettings, got {type(self.learn).__name__}")
        changed = {k: getattr(self.learn, k) for k, v in FIXED_LEARN.items() if getattr(self.learn, k) != v}
        if changed:
            raise ConfigError(f"the curriculum fixes {FIXED_LEARN} of the learning settings, got {changed}")
        for name, c, g in self.levels:
            if not name or not 2 <= c <= 15 or not 1 <= g <= 4:
                raise ConfigError(f"level {name!r}: candidates must be in [2, 15] and guesses in [1, 4], got {c}, {g}")
        if len({n for n, _, _ in self.levels}) != len(self.levels) or not self.levels:
            raise ConfigError("levels need distinct names (and at least one level)")
        try:
            DesignerRewardVariant(self.reward)
        except ValueError:
            raise ConfigError(f"reward must be one of {[v.value for v in DesignerRewardVariant]}, "
                              f"got {self.reward!r}") from None
        if self.invalid_designs not in ("reject", "shape"):
            raise ConfigError(f"invalid_designs must be 'reject' or 'shape', got {self.invalid_designs!r}")
        if self.designer_scale is not None and not (self.designer_scale > 0 and math.isfinite(self.designer_scale)):
            raise ConfigError(f"designer_scale must be a finite number > 0, got {self.designer_scale!r}")
        if self.designer_max_new_tokens < 4:
            raise ConfigError(f"designer_max_new_tokens must be >= 4, got {self.designer_max_new_tokens}")

    @classmethod
    def of(cls, **values: Any) -> CurriculumSettings:
        """The settings from flat fields: the curriculum's own (``arm``, ``levels``, ...) and
        the shared ones of :class:`~.experiment.LearnSettings` (``seed``, ``updates``, ...),
        which go to ``learn``. The fixed three (:data:`FIXED_LEARN`) are not fields here."""
        own = {f.name for f in fields(cls)} - {"learn"}
        shared = {k: v for k, v in values.items() if k not in own}
        unknown = sorted(set(shared) - set(_shared_names()))
        if unknown:
            raise ConfigError(f"not a curriculum setting: {', '.join(unknown)}")
        return cls(learn=LearnSettings(**FIXED_LEARN, **shared), **{k: v for k, v in values.items() if k in own})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CurriculumSettings:
        """The settings a ``curriculum.json`` recorded (its ``settings``, as :meth:`to_json`
        writes them; ``designer_scale_used`` is derived and dropped; a missing field, as
        ``device`` in runs from before it existed, takes its default)."""
        flat = {k: v for k, v in data.items() if k != "designer_scale_used"}
        if "levels" in flat:
            flat["levels"] = tuple(tuple(lv) for lv in flat["levels"])
        return cls.of(**flat)

    def to_json(self) -> dict[str, Any]:
        """The flat settings a run records: ``arm``, the shared fields, the curriculum's own
        (the keys and order of the runs under ``docs/learning/curriculum``; the fixed three
        of ``learn`` are not recorded)."""
        shared = {k: v for k, v in asdict(self.learn).items() if k not in FIXED_LEARN}
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("arm", "learn")}
        out: dict[str, Any] = {"arm": self.arm, **shared, **own, "levels": [list(lv) for lv in self.levels]}
        out["device"] = out.pop("device")  # last, where runs have always recorded it
        return out

    def at(self, candidates: int, guesses: int) -> LearnSettings:
        """The learning experiment's settings at these knobs (its evaluation is reused)."""
        return replace(self.learn, candidates=candidates, guesses=guesses)

    @property
    def scale(self) -> float:
        """The designer advantage multiplier in use."""
        if self.designer_scale is not None:
            return float(self.designer_scale)
        return min(DESIGNER_SCALE_MAX, float(self.learn.group_size))  # groups x group_size agent / groups designer


def _shared_names() -> list[str]:
    """The learning experiment's fields the curriculum shares (all but :data:`FIXED_LEARN`)."""
    return [f.name for f in fields(LearnSettings) if f.name not in FIXED_LEARN]


def parse_levels(text: str) -> tuple[tuple[str, int, int], ...]:
    """``easy=2x2,default=3x2,hard=7x3`` as ``((name, candidates, guesses), ...)``."""
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, knobs = part.partition("=")
        c, _, g = knobs.lower().partition("x")
        try:
            out.append((name.strip(), int(c), int(g)))
        except ValueError:
            raise ConfigError(f"level {part!r}: write NAME=CANDIDATESxGUESSES, e.g. hard=7x3") from None
    return tuple(out)


def format_levels(levels: tuple[tuple[str, int, int], ...]) -> str:
    """The inverse of :func:`parse_levels`: ``easy=2x2,default=3x2,hard=7x3``."""
    return ",".join(f"{name}={c}x{g}" for name, c, g in levels)


__all__ = ["ARMS", "DEFAULT_LEVELS", "DESIGNER_SCALE_MAX", "FIXED_LEARN", "TRAINER_NAMES", "Arm", "ControlMode",
           "CurriculumSettings", "GroupInstance", "LearnSettings", "Trainer", "check_device", "format_levels",
           "parse_levels"]
