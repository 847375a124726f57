"""The designer's configuration: one validated model, the ``[designer]`` table of
``spade.toml`` (``DesignerConfig.from_spade_config(cfg)``), overridable by flags."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from spade_core.errors import ConfigError

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SamplingSettings(_Model):
    max_new_tokens: int = Field(default=2048, ge=1, le=131_072)
    temperature: float = Field(default=1.0, ge=0.0, le=5.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)


class MemoryPolicy(_Model):
    """Which earlier environments a design prompt shows (defaults: the reference recipe)."""

    #: How many of the most recent environments of the domain retrieval considers.
    window: int = Field(default=200, ge=1, le=100_000)
    #: High-regret examples with win rate inside ``band``, shown as "make something different".
    high_regret: int = Field(default=2, ge=0, le=20)
    band: tuple[float, float] = (0.15, 0.85)
    #: The high-regret examples are drawn at random (per design, when the caller passes a
    #: random generator) from the top ``max(high_regret_pool_factor * high_regret,
    #: high_regret_pool_min)`` in-band environments by regret (the reference: max(3n, 10)).
    high_regret_pool_factor: int = Field(default=3, ge=1, le=100)
    high_regret_pool_min: int = Field(default=10, ge=1, le=10_000)
    #: Too-easy (win rate above ``negative_band``) or too-hard (below) negatives.
    negatives: int = Field(default=1, ge=0, le=20)
    negative_band: tuple[float, float] = (0.1, 0.9)
    #: Environments that failed validation, shown with their reasons (not in the reference).
    failures: int = Field(default=1, ge=0, le=20)
    #: Show examples of the requested skill only (the reference); when false, other skills
    #: fill the remaining places (after the requested skill's when ``same_skill_first``).
    same_skill_only: bool = True
    #: Prefer examples of the requested skill; other skills fill the remaining places.
    same_skill_first: bool = True
    #: Two examples whose code is at least this similar (token-shingle Jaccard) are
    #: near-duplicates: only the first is shown.
    near_duplicate: float = Field(default=0.7, ge=0.0, le=1.0)
    #: How much of each example's source the prompt shows.
    code_prefix_chars: int = Field(default=1200, ge=0, le=100_000)

    @model_validator(mode="after")
    def _band_ok(self) -> MemoryPolicy:
        for name in ("band", "negative_band"):
            lo, hi = getattr(self, name)
            if not 0.0 <= lo < hi <= 1.0:
                raise ValueError(f"{name} must satisfy 0 <= low < high <= 1; got {getattr(self, name)}")
        return self


class HintSettings(_Model):
    enabled: bool = True
    max_new_tokens: int = Field(default=160, ge=8, le=4096)
    #: The reference recipe writes self-hints at 0.3.
    temperature: float = Field(default=0.3, ge=0.0, le=5.0)
    #: Hint writing attempts before the environment is rejected at stage "hint".
    attempts: int = Field(default=2, ge=1, le=10)
    max_sentences: int = Field(default=3, ge=1, le=10)
    max_chars: int = Field(default=600, ge=20, le=4000)
    #: Seeds at which the environment's solution is computed for the leakage check.
    check_seeds: list[int] = Field(default_factory=lambda: [42, 123])
    #: A solution value this short (after normalising) is too common to count as a leak
    #: on its own ("a", "1"); it still counts inside a leaked sequence.
    min_key_chars: int = Field(default=2, ge=1, le=100)
    #: Reject when the hint names at least this fraction of the solution's distinct
    #: actions (only for solutions of at least two distinct actions).
    max_action_fraction: float = Field(default=0.5, gt=0.0, le=1.0)


class EditSettings(_Model):
    """Design by editing: how a parent is chosen and what kind of edit is asked for."""

    #: ``parameter``: new values for the parent's declared knobs (``KNOBS``);
    #: ``code``: a unified diff or a rewritten method; ``auto``: parameter when the
    #: parent declares knobs, code otherwise.
    kind: Literal["auto", "parameter", "code"] = "auto"
    #: Reply budget of a parameter edit (``NAME=value, ...`` is a few tokens).
    parameter_max_new_tokens: int = Field(default=24, ge=4, le=4096)
    #: Reply budget of a code edit (``None``: the design budget, ``sampling.max_new_tokens``).
    code_max_new_tokens: int | None = Field(default=None, ge=16, le=131_072)
    #: Parents are drawn from the best this many frontier environments of the skill.
    frontier_size: int = Field(default=3, ge=1, le=1000)
    #: Win-rate band of the frontier (environments the agent neither always wins nor always loses).
    band: tuple[float, float] = (0.15, 0.85)
    #: Try the parent's hint for the child first (checked for leakage against the child)
    #: before writing a new one.
    reuse_parent_hint: bool = True
    #: How much of the parent's source a code edit prompt shows.
    code_chars: int = Field(default=6000, ge=200, le=200_000)
    #: Share of a self-play loop's designs made by editing (``mix = "fixed"``), or the
    #: bandit's prior (``mix = "bandit"``); 0 writes every design from scratch.
    share: float = Field(default=0.0, ge=0.0, le=1.0)
    #: ``fixed``: each design is an edit with probability ``share``; ``bandit``: UCB1 on the
    #: admissions and designer reward each operator earned (:mod:`spade_designer.operators`).
    mix: Literal["fixed", "bandit"] = "fixed"
    #: Under the bandit, each operator keeps at least this share of the designs.
    min_share: float = Field(default=0.1, ge=0.0, le=0.5)


class DesignerConfig(_Model):
    backend: str = "transformers"
    #: Model path/id for the backend (``None``: the backend's default).
    model: str | None = None
    backend_options: dict[str, Any] = Field(default_factory=dict)
    #: A registered corpus, or ``"none"``: no grounding document in the design prompt.
    corpus: str = "pydocs"
    corpus_options: dict[str, Any] = Field(default_factory=dict)
    #: A registered memory, or ``"none"``: no earlier environment in the design prompt.
    memory: str = "store"
    memory_policy: MemoryPolicy = Field(default_factory=MemoryPolicy)
    #: Grounding documents are truncated to this many words (reference: 4-6K).
    document_words: int = Field(default=4000, ge=0, le=100_000)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    #: Repair rounds after a failed validation (each one recorded); 0 disables repair.
    repair_attempts: int = Field(default=2, ge=0, le=10)
    #: How many findings of a failed validation the repair prompt quotes.
    repair_findings: int = Field(default=6, ge=1, le=50)
    hint: HintSettings = Field(default_factory=HintSettings)
    edit: EditSettings = Field(default_factory=EditSettings)
    #: Keep rejected candidates in the store (status retired, with their report).
    store_rejected: bool = True
    #: Difficulty used when a round does not ask for one (0 easy .. 1 hard).
    default_difficulty: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Overrides the built-in system prompt of the designer role.
    system_prompt: str | None = None
    #: ``full``: the domain's whole spec and example, the reply writes the whole file.
    #: ``compact``: a brief task and a code scaffold the reply completes (prefilled; needs
    #: a backend that continues a prefilled reply and a domain whose action format has a
    #: scaffold). ``auto``: compact when both hold and the reply budget is under
    #: ``compact_below_tokens``, else full.
    prompt_style: Literal["auto", "full", "compact"] = "auto"
    #: A whole environment in the full format needs about 550-1000 tokens; budgets below
    #: this use the compact prompt under ``prompt_style = "auto"``.
    compact_below_tokens: int = Field(default=1024, ge=1, le=131_072)

    @classmethod
    def load(cls, data: dict[str, Any] | None = None, **overrides: Any) -> DesignerConfig:
        """Validate a ``[designer]`` table plus overrides (``None`` values are ignored)."""
        merged = dict(data or {})
        merged.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(merged)
        except ValidationError as exc:
            lines = ["invalid [designer] configuration:"]
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"]) or "(root)"
                lines.append(f"  designer.{loc}: {err['msg']}")
            raise ConfigError("\n".join(lines)) from None

    @classmethod
    def from_spade_config(cls, config: SpadeConfig, **overrides: Any) -> DesignerConfig:
        """``[designer]`` of ``config``: the one the command's edge validated when no flag
        overrides it, else the table validated again with the flags over it."""
        checked = config.settings("designer")
        if isinstance(checked, cls) and all(v is None for v in overrides.values()):
            return checked
        return cls.load(config.section("designer"), **overrides)
