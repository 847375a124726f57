"""Stage 8, novelty: reject a near-duplicate of a known environment.

Known environments are the store's (:class:`..minhash.NoveltyIndex`) and, in a batch, the
batch's earlier candidates that passed (``run.peers``). Two measures, each with its own
threshold:

* code — MinHash over normalised code tokens (:mod:`..minhash`), ``novelty_threshold``;
* description — cosine similarity of description embeddings, ``description_threshold``,
  only where an embedding plugin answers ``spade_embed_texts`` (otherwise code only).

A near-duplicate is rejected with the id of its twin in ``duplicate_of`` and the
similarity in the finding. The candidate's own id (re-validation of a stored
environment) is never its own twin.
"""

from __future__ import annotations

from ..codes import Reason
from ..context import Run
from ..runner import Rejection


def _nearest(found: list[tuple[str, float] | None]) -> tuple[str, float] | None:
    hits = [f for f in found if f is not None]
    return max(hits, key=lambda h: h[1]) if hits else None


def check(run: Run) -> str:
    indexes = [i for i in (run.novelty, run.peers) if i is not None and len(i) > 0]
    if not indexes:
        return "no stored environments to compare with"
    cand = run.candidate
    sig = indexes[0].hasher.signature(cand.source)
    nearest = _nearest([i.nearest_signature(sig, exclude=cand.env_id) for i in indexes])
    if nearest is None:
        return "no other stored environment to compare with"
    twin, score = nearest
    if score >= run.config.novelty_threshold:
        _duplicate(run, twin, score, "code", run.config.novelty_threshold)
    summary = f"nearest stored environment {twin} at similarity {score:.2f}"
    described = _description_check(run, indexes)
    return summary + (f"; {described}" if described else "")


def _description_check(run: Run, indexes: list) -> str | None:
    text = run.candidate.description.strip()
    held = [i.descriptions for i in indexes if i.descriptions is not None and len(i.descriptions) > 0]
    if not text or not held:
        return None
    vector = held[0].embed([text])
    if vector is None:  # no plugin answered: code-only novelty
        return None
    nearest = _nearest([d.nearest(vector[0], exclude=run.candidate.env_id) for d in held])
    if nearest is None:
        return None
    twin, score = nearest
    if score >= run.config.description_threshold:
        _duplicate(run, twin, score, "description", run.config.description_threshold)
    return f"nearest description {twin} at cosine {score:.2f}"


def _duplicate(run: Run, twin: str, score: float, measure: str, threshold: float) -> None:
    run.duplicate_of = twin
    what = "code similarity" if measure == "code" else "description cosine similarity"
    raise Rejection(
        Reason.near_duplicate,
        f"near-duplicate of {twin} (estimated {what} {score:.2f} >= {threshold})",
        details={"twin": twin, "similarity": round(score, 3), "measure": measure},
    )
