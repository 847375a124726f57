"""The evaluation harness (:mod:`spade_core.app.eval_harness`, where the self-play loop's
periodic evaluation reaches it too), re-exported for ``spade eval`` and its callers."""

from spade_core.app.eval_harness import (
    SYSTEM_PROMPT,
    Z95,
    EpisodeResult,
    EvalResult,
    GroupStats,
    evaluate,
    wilson,
)

__all__ = ["SYSTEM_PROMPT", "Z95", "EpisodeResult", "EvalResult", "GroupStats", "evaluate", "wilson"]
