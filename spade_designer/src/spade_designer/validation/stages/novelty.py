"""Stage 8, novelty: reject a near-duplicate of an environment already in the store.

Similarity is MinHash over normalised code tokens (:mod:`..minhash`); a candidate at or
above ``novelty_threshold`` is rejected with the id of its twin in ``duplicate_of``. The
candidate's own id (re-validation of a stored environment) is never its own twin.
"""

from __future__ import annotations

from ..codes import Reason
from ..context import Run
from ..runner import Rejection


def check(run: Run) -> str:
    index = run.novelty
    if index is None or len(index) == 0:
        return "no stored environments to compare with"
    nearest = index.nearest(run.candidate.source, exclude=run.candidate.env_id)
    if nearest is None:
        return "no other stored environment to compare with"
    twin, score = nearest
    if score >= run.config.novelty_threshold:
        run.duplicate_of = twin
        raise Rejection(
            Reason.near_duplicate,
            f"near-duplicate of {twin} (estimated code similarity {score:.2f} >= {run.config.novelty_threshold})",
            details={"twin": twin, "similarity": round(score, 3)},
        )
    return f"nearest stored environment {twin} at similarity {score:.2f}"
