"""Hypothesis strategies for the metadata models, shared by the metadata, store and
importer suites: one definition of "any valid record", so every suite tests the same space.

``env_metadata(unique_names=True)`` is for suites whose examples share one store (each
example gets a name no other example has); ``with_code_hash=False`` leaves ``code_hash``
empty, as callers of :meth:`EnvStore.add` do (the store fills it).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import strategies as st
from spade_core.metadata import (
    ActionFormat,
    DocumentRef,
    EnvMetadata,
    EnvStatus,
    Finding,
    StatsSnapshot,
    ValidationReport,
)

_unique = itertools.count()

#: Any text a record may hold: no lone surrogates (not encodable) and no NUL (refused by
#: the store in indexed columns, and not valid in PostgreSQL text).
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
names = st.from_regex(r"[A-Za-z][A-Za-z0-9_.]{0,20}", fullmatch=True)
unit = st.floats(0.0, 1.0, allow_nan=False)
#: Naive, UTC and non-UTC aware times, over a range wider than any real record.
moments = st.datetimes(
    min_value=datetime(1971, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30))]),
)
#: What a finding's free-form ``details`` may hold and JSON carries exactly.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
code_hashes = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)

findings = st.builds(
    Finding,
    stage=texts,
    ok=st.booleans(),
    message=texts,
    actions=st.none() | st.lists(texts, max_size=3),
    seed=st.none() | st.integers(0, 2**32),
    details=st.dictionaries(texts, json_values, max_size=3),
)


@st.composite
def reports(draw: st.DrawFn) -> ValidationReport:
    passed = draw(st.booleans())
    return ValidationReport(
        passed=passed,
        failed_stage=None if passed else draw(texts),
        reasons=draw(st.lists(texts, max_size=3)),
        findings=draw(st.lists(findings, max_size=2)),
        timings=draw(st.dictionaries(texts, st.floats(0, 1e6, allow_nan=False), max_size=3)),
        feasibility_proven=draw(st.booleans()),
        duplicate_of=draw(st.none() | texts),
        validated_at=draw(moments),
    )


snapshots = st.builds(
    StatsSnapshot,
    policy_snapshot=texts.filter(bool),
    samples=st.integers(0, 10**6),
    win_rate=unit,
    regret=st.none() | st.floats(0, 1e3, allow_nan=False),
    mean_return_hinted=st.none() | st.floats(-1, 1, allow_nan=False),
    mean_return_unhinted=st.none() | st.floats(-1, 1, allow_nan=False),
    measured_at=moments,
)


@st.composite
def env_metadata(draw: st.DrawFn, *, unique_names: bool = False, with_code_hash: bool = True) -> EnvMetadata:
    """Any valid :class:`EnvMetadata`."""
    lo = draw(st.floats(-1e6, 1e6, allow_nan=False))
    hi = lo + draw(st.floats(1e-3, 1e6, allow_nan=False))
    name = draw(names)
    if unique_names:
        name = f"{name}_{next(_unique)}"
    return EnvMetadata(
        name=name,
        version=draw(st.integers(1, 10**6)),
        domain=draw(texts.filter(bool).map(lambda s: s[:64])),
        skill=draw(texts.filter(bool)),
        description=draw(texts),
        difficulty=draw(st.none() | unit),
        max_turns=draw(st.integers(1, 10_000)),
        reward_range=(lo, hi),
        action_format=draw(st.sampled_from(ActionFormat)),
        class_name=draw(st.none() | st.from_regex(r"[A-Z][a-zA-Z]{0,10}Env", fullmatch=True)),
        document=draw(st.none() | st.builds(DocumentRef, corpus=texts, doc_id=texts, title=st.none() | texts)),
        designer_model=draw(st.none() | texts),
        parent_ids=draw(st.lists(st.builds(lambda n, v: f"{n}-v{v}", names, st.integers(1, 99)), max_size=3)),
        code_hash=draw(st.just("") | code_hashes) if with_code_hash else "",
        hint=draw(st.none() | texts),
        nondeterministic=draw(st.booleans()),
        validation=draw(st.none() | reports()),
        stats=draw(st.lists(snapshots, max_size=3)),
        status=draw(st.sampled_from(EnvStatus)),
        tags=draw(st.lists(texts, max_size=3)),
        created_at=draw(moments),
        updated_at=draw(moments),
    )
