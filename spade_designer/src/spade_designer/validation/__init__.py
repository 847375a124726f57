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

from .codes import STAGE_ORDER, Reason, Stage
from .config import ValidationConfig
from .errors import ValidationInputError
from .minhash import MinHasher, NoveltyIndex
from .pipeline import ValidationRequest, Validator, fuzz

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
