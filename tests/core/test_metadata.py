"""Metadata models: every valid record survives JSON, every invalid field is named, and
the published JSON Schema accepts what the models produce."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from spade_core.metadata import (
    SCHEMA_VERSION,
    EnvMetadata,
    StatsSnapshot,
    ValidationReport,
    code_hash,
    json_schema,
)

from .strategies import env_metadata


# No deadline: the machine is shared, and a slow example is not a wrong one.
@settings(max_examples=60, deadline=None)
@given(env_metadata())
def test_any_valid_metadata_round_trips_through_json(meta: EnvMetadata) -> None:
    assert EnvMetadata.model_validate_json(meta.model_dump_json()) == meta


_VALIDATOR = jsonschema.Draft202012Validator(json_schema())


@settings(max_examples=60, deadline=None)
@given(env_metadata())
def test_the_json_schema_accepts_every_model_dump(meta: EnvMetadata) -> None:
    _VALIDATOR.validate(meta.model_dump(mode="json"))


def test_the_json_schema_is_a_valid_schema_with_a_versioned_id() -> None:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(f"env-metadata-v{SCHEMA_VERSION}.json")


@pytest.mark.parametrize(
    "field, value",
    [("max_turns", 0), ("difficulty", 1.5), ("status", "published"), ("action_format", "morse"), ("version", 0)],
)
def test_the_json_schema_rejects_what_the_model_rejects(field: str, value: Any) -> None:
    doc = EnvMetadata(name="ok", domain="games", skill="logic").model_dump(mode="json")
    doc[field] = value
    with pytest.raises(jsonschema.ValidationError):
        _VALIDATOR.validate(doc)
    with pytest.raises(ValidationError):
        EnvMetadata.model_validate(doc)


def test_id_is_derived_from_name_and_version() -> None:
    meta = EnvMetadata(name="maze", version=3, domain="games", skill="spatial")
    assert meta.id == "maze-v3"
    assert meta.gym_id == "spade/maze-v3"


def _field_errors(**fields: Any) -> dict[str, str]:
    base: dict[str, Any] = {"name": "ok", "domain": "games", "skill": "logic"}
    base.update(fields)
    with pytest.raises(ValidationError) as err:
        EnvMetadata.model_validate(base)
    return {".".join(str(p) for p in e["loc"]): e["msg"] for e in err.value.errors()}


@pytest.mark.parametrize(
    "fields, field, words",
    [
        ({"name": "spade/maze-v1"}, "name", "becomes the Gymnasium id"),
        ({"name": "1maze"}, "name", "start with a letter"),
        ({"name": ""}, "name", "at least 1 character"),
        ({"domain": ""}, "domain", "at least 1 character"),
        ({"max_turns": 0}, "max_turns", "greater than or equal to 1"),
        ({"difficulty": -0.5}, "difficulty", "greater than or equal to 0"),
        ({"reward_range": (1.0, 0.0)}, "reward_range", "low < high"),
        ({"reward_range": (0.0, float("inf"))}, "reward_range", "finite"),
        ({"code_hash": "abc"}, "code_hash", "64 lowercase hex"),
        ({"status": "published"}, "status", "'candidate', 'admitted' or 'retired'"),
        ({"unknown_field": 1}, "unknown_field", "Extra inputs are not permitted"),
        ({"id": "other-v1"}, "", "does not match name and version"),
    ],
)
def test_invalid_fields_are_rejected_with_a_field_level_message(fields: dict[str, Any], field: str, words: str) -> None:
    errors = _field_errors(**fields)
    assert field in errors, errors
    assert words in errors[field]


def test_a_validation_report_must_be_consistent() -> None:
    with pytest.raises(ValidationError, match="must name failed_stage"):
        ValidationReport(passed=False)
    with pytest.raises(ValidationError, match="cannot name a failed_stage"):
        ValidationReport(passed=True, failed_stage="static")


def test_stats_bounds() -> None:
    with pytest.raises(ValidationError, match="win_rate"):
        StatsSnapshot(policy_snapshot="s1", samples=3, win_rate=1.2)
    with pytest.raises(ValidationError, match="regret"):
        StatsSnapshot(policy_snapshot="s1", samples=3, win_rate=0.5, regret=-0.1)


@given(st.text(max_size=200))
def test_code_hash_ignores_line_ending_style(source: str) -> None:
    unix = source.replace("\r\n", "\n").replace("\r", "\n")
    assert code_hash(unix.replace("\n", "\r\n")) == code_hash(unix)
    assert len(code_hash(source)) == 64


def test_latest_stats_is_the_last_snapshot() -> None:
    now = datetime.now(UTC)
    s1 = StatsSnapshot(policy_snapshot="a", samples=1, win_rate=0.1, measured_at=now)
    s2 = StatsSnapshot(policy_snapshot="b", samples=2, win_rate=0.2, measured_at=now + timedelta(seconds=1))
    meta = EnvMetadata(name="x", domain="d", skill="s", stats=[s1, s2])
    assert meta.latest_stats == s2
    assert EnvMetadata(name="x", domain="d", skill="s").latest_stats is None
