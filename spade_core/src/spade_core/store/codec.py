"""Metadata documents <-> rows. The document (JSON of EnvMetadata) is the source of truth;
the indexed columns next to it are copies kept in step on every write."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..errors import StoreError
from ..metadata import EnvMetadata, identity


def encode(meta: EnvMetadata) -> str:
    """The stored document; refuses metadata that would not come back equal.

    Pydantic's JSON cannot carry everything an ``Any`` field may hold (tuples come back as
    lists, NaN as null...), so the check is done here rather than discovered on read.
    """
    document = meta.model_dump_json()
    if meta.validation is None:
        # Every other field is typed and bounded, so JSON carries it exactly; only the
        # validation report has free-form values (finding details, unbounded timings).
        return document
    back = EnvMetadata.model_validate_json(document)
    if back != meta:
        changed = [f for f in EnvMetadata.model_fields if getattr(back, f) != getattr(meta, f)]
        raise StoreError(
            f"metadata of {meta.id} would not survive storage unchanged (fields: {', '.join(changed)}); "
            "use JSON-compatible values (lists, not tuples; finite floats; string keys)"
        )
    return document


def decode(document: str, *, env_id: str, where: str) -> EnvMetadata:
    try:
        return EnvMetadata.model_validate_json(document)
    except ValidationError as err:
        raise StoreError(f"{where}: stored metadata of {env_id} is invalid: {err.error_count()} error(s): {err}") from None


#: Columns of an ``envs`` row as :func:`row_values` and :func:`row_tuple` give them.
ENV_COLUMNS = ("id", "name", "version", "domain", "skill", "status", "code_hash", "created_at", "updated_at", "document")


def row_tuple(meta: EnvMetadata, document: str) -> tuple[Any, ...]:
    """:func:`row_values` in :data:`ENV_COLUMNS` order (for driver-level inserts)."""
    return (
        meta.id,
        meta.name,
        meta.version,
        meta.domain,
        meta.skill,
        meta.status.value,
        meta.code_hash,
        meta.created_at.isoformat(),
        meta.updated_at.isoformat(),
        document,
    )


def row_values(meta: EnvMetadata, document: str) -> dict[str, Any]:
    """Column values of the ``envs`` row of ``meta`` (without ``seq``)."""
    return {
        **identity(meta),
        "status": meta.status.value,
        "code_hash": meta.code_hash,
        "created_at": meta.created_at.isoformat(),
        "updated_at": meta.updated_at.isoformat(),
        "document": document,
    }


def parent_rows(meta: EnvMetadata) -> list[dict[str, Any]]:
    return [{"child_id": meta.id, "position": i, "parent_id": p} for i, p in enumerate(meta.parent_ids)]
