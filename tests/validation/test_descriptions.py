"""Novelty by description embedding: the ``spade_embed_texts`` hook, the built-in lexical
embedder, and the novelty stage with and without an embedding plugin."""

from __future__ import annotations

import math
import string

import numpy as np
import pytest
from conftest import corpus_source
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.errors import PluginError
from spade_core.hookspecs import hookimpl
from spade_core.metadata import EnvMetadata
from spade_core.plugins import SpadePlugins
from spade_designer.embedding import DIMENSIONS, embed_text, embed_texts
from spade_designer.validation import MinHasher, NoveltyIndex, Stage, ValidationConfig, Validator
from spade_designer.validation.descriptions import plugin_embedder

ORIGINAL = "Search flights and hotels, book the cheapest within a trip budget, report what is left."
EDITED = "Search flights and hotels, book the cheapest within a travel budget, report what is left."
UNRELATED = "Move the disks between three pegs; a larger disk never rests on a smaller one."
#: Only the static and novelty stages: no sandbox needed to judge novelty.
CONFIG = ValidationConfig(stages=(Stage.static, Stage.novelty))


def with_builtin() -> SpadePlugins:
    return SpadePlugins(only=["designer-embedding"])


def without_embedder() -> SpadePlugins:
    return SpadePlugins(load_entry_points=False)


def validator_for(plugins: SpadePlugins) -> Validator:
    index = NoveltyIndex(MinHasher(), embedder=plugin_embedder(plugins))
    return Validator(config=CONFIG, novelty=index)


def meta(name: str, description: str) -> EnvMetadata:
    return EnvMetadata(name=name, domain="corpus", skill="test", description=description)


# --- the built-in embedder --------------------------------------------------------------


@given(st.text(max_size=300))
@settings(max_examples=60)
def test_every_text_embeds_to_a_unit_or_zero_vector_of_fixed_size_the_same_every_time(text):
    v = embed_text(text)
    assert v.shape == (DIMENSIONS,)
    assert np.array_equal(v, embed_text(text))
    norm = float(np.linalg.norm(v))
    assert math.isclose(norm, 1.0, rel_tol=1e-9) or (norm == 0.0 and not text.split())


@given(st.text(string.ascii_letters + string.digits + " .,", min_size=1, max_size=200).filter(lambda t: t.split()))
@settings(max_examples=40)
def test_case_and_spacing_do_not_change_a_description(text):
    assert float(embed_text(text) @ embed_text("  " + text.upper().replace(" ", "   \n"))) == pytest.approx(1.0)


def test_an_edited_copy_scores_above_the_threshold_and_an_unrelated_text_far_below():
    a, b, c = (np.array(v) for v in embed_texts([ORIGINAL, EDITED, UNRELATED]))
    assert a @ b >= CONFIG.description_threshold
    assert a @ c < 0.4


def test_the_builtin_embedder_is_an_installed_plugin_answering_the_hook():
    vectors = with_builtin().pm.hook.spade_embed_texts(texts=[ORIGINAL, UNRELATED])
    assert len(vectors) == 2 and len(vectors[0]) == DIMENSIONS
    assert without_embedder().pm.hook.spade_embed_texts(texts=[ORIGINAL]) is None


# --- the novelty stage ------------------------------------------------------------------


def test_a_near_duplicate_description_of_different_code_is_rejected_with_its_twin():
    validator = validator_for(with_builtin())
    twin = meta("trip", ORIGINAL)
    validator.novelty.add(twin.id, corpus_source("good", "hanoi"), description=ORIGINAL)
    report = validator.validate(corpus_source("good", "key_door"), metadata=meta("trip2", EDITED))
    assert report.failed_stage == "novelty" and report.duplicate_of == twin.id
    (finding,) = [f for f in report.findings if not f.ok]
    assert finding.code == "near_duplicate" and finding.details["measure"] == "description"
    assert finding.details["similarity"] >= CONFIG.description_threshold


def test_an_unrelated_description_of_different_code_passes():
    validator = validator_for(with_builtin())
    validator.novelty.add("trip", corpus_source("good", "hanoi"), description=ORIGINAL)
    report = validator.validate(corpus_source("good", "key_door"), metadata=meta("disks", UNRELATED))
    assert report.passed, report.reasons
    assert "nearest description trip" in report.findings[-1].message


def test_without_an_embedding_plugin_novelty_judges_code_only():
    validator = validator_for(without_embedder())
    validator.novelty.add("trip", corpus_source("good", "hanoi"), description=ORIGINAL)
    assert validator.validate(corpus_source("good", "key_door"), metadata=meta("trip2", EDITED)).passed
    copy = validator.validate(corpus_source("bad", "n_dup_hanoi"), metadata=meta("other", UNRELATED))
    assert copy.failed_stage == "novelty" and copy.duplicate_of == "trip"


def test_batch_peers_are_compared_by_description_too(inprocess_runner):
    index = NoveltyIndex(MinHasher(), embedder=plugin_embedder(with_builtin()))
    validator = Validator(pool=inprocess_runner, config=CONFIG, novelty=index)
    first, second = meta("trip", ORIGINAL), meta("trip2", EDITED)
    from spade_designer.validation import ValidationRequest

    reports = validator.validate_many(
        [ValidationRequest(corpus_source("good", "hanoi"), first), ValidationRequest(corpus_source("good", "key_door"), second)]
    )
    assert reports[0].passed and reports[1].duplicate_of == first.id


class ModelEmbedder:
    """A plugin standing in for a model-based embedder: it answers before the built-in."""

    def __init__(self, vectors):
        self.vectors = vectors

    @hookimpl
    def spade_embed_texts(self, texts):
        return self.vectors(texts)


def test_an_installed_embedding_plugin_wins_over_the_builtin():
    plugins = with_builtin()
    plugins.register(ModelEmbedder(lambda texts: [[1.0, 0.0] for _ in texts]), name="model-embedder")
    validator = validator_for(plugins)
    validator.novelty.add("trip", corpus_source("good", "hanoi"), description=ORIGINAL)
    report = validator.validate(corpus_source("good", "key_door"), metadata=meta("disks", UNRELATED))
    assert report.duplicate_of == "trip", "the plugin's (constant) vectors decided, not the lexical ones"


@pytest.mark.parametrize(
    "answer",
    [lambda texts: [], lambda texts: [[1.0, "x"] for _ in texts], lambda texts: [[math.nan, 1.0] for _ in texts]],
    ids=["too few vectors", "not numbers", "not finite"],
)
def test_a_malformed_embedding_is_a_plugin_error(answer):
    plugins = without_embedder()
    plugins.register(ModelEmbedder(answer), name="broken-embedder")
    index = NoveltyIndex(MinHasher(), embedder=plugin_embedder(plugins))
    with pytest.raises(PluginError, match="embedding plugin"):
        index.add("a", "x = 1", description="one")
        index.add("b", "y = 2", description="two")
