"""Validation and property-based fuzzing of environments.

Every environment — written by the designer model, by a person, or imported from a
published pool — passes one pipeline before admission::

    from spade_designer.validation import Validator
    with Validator() as v:                 # a sandbox pool is created on first need
        report = v.validate(source, metadata=meta, hint=hint, store=store)
    report.passed, report.failed_stage, report.findings

Stages (the first failure stops it): static, load, contract, determinism, fuzz,
feasibility, degenerate, novelty. Failing findings carry a reason code
(:class:`Reason`) and, where there is one, a replayable action list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_core.lazy import lazy_attributes

if TYPE_CHECKING:
    from .codes import STAGE_ORDER, Reason, Stage
    from .config import ValidationConfig
    from .errors import ValidationInputError
    from .minhash import MinHasher, NoveltyIndex
    from .pipeline import ValidationRequest, Validator, fuzz

# Imported on first access: ``spade validate`` / ``spade fuzz`` are registered on every
# ``spade`` command, and the pipeline pulls in hypothesis (a quarter of a second).
_LAZY = {
    "STAGE_ORDER": ".codes",
    "Reason": ".codes",
    "Stage": ".codes",
    "ValidationConfig": ".config",
    "ValidationInputError": ".errors",
    "MinHasher": ".minhash",
    "NoveltyIndex": ".minhash",
    "ValidationRequest": ".pipeline",
    "Validator": ".pipeline",
    "fuzz": ".pipeline",
}

__all__ = [
    "STAGE_ORDER",
    "MinHasher",
    "NoveltyIndex",
    "Reason",
    "Stage",
    "ValidationConfig",
    "ValidationInputError",
    "ValidationRequest",
    "Validator",
    "fuzz",
]


__getattr__ = lazy_attributes(__name__, _LAZY, globals())
