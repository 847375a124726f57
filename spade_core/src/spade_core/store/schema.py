"""SQLAlchemy Core tables of the environment store (the latest schema version).

Layout: code is content-addressed in ``code_blobs`` (one row per distinct source);
``envs`` holds one row per environment version with the columns queries filter on
(name, version, domain, skill, status, code hash) next to the full metadata document
(JSON of :class:`~spade_core.metadata.EnvMetadata`); ``env_parents`` holds lineage edges
so descendants are one indexed query. ``seq`` gives a stable insertion order.

Indexes are not declared here: each is created (or dropped) by the migration that
introduced it, so that a store's history lives in one place, :mod:`.migrations`.
"""

from __future__ import annotations

from sqlalchemy import (
    CHAR,
    Column,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from .layout import BLOBS_TABLE, ENVS_TABLE, PARENTS_TABLE, SCHEMA_TABLE

metadata_obj = MetaData()

#: Longest environment id (and parent id) a row holds.
MAX_ID_LENGTH = 200
#: Largest version an ``Integer`` column holds on every backend (PostgreSQL's 4-byte integer).
MAX_VERSION = 2**31 - 1

schema_table = Table(
    SCHEMA_TABLE,
    metadata_obj,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", String(200), nullable=False),
    Column("applied_at", String(40), nullable=False),
)

blobs = Table(
    BLOBS_TABLE,
    metadata_obj,
    Column("code_hash", CHAR(64), primary_key=True),
    Column("source", Text, nullable=False),
    Column("size", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
)

envs = Table(
    ENVS_TABLE,
    metadata_obj,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(MAX_ID_LENGTH), nullable=False, unique=True),
    Column("name", String(120), nullable=False),
    Column("version", Integer, nullable=False),
    Column("domain", String(64), nullable=False),
    Column("skill", String(120), nullable=False),
    Column("status", String(16), nullable=False),
    Column("code_hash", CHAR(64), ForeignKey(f"{BLOBS_TABLE}.code_hash"), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
    Column("document", Text, nullable=False),
    UniqueConstraint("name", "version", name="uq_envs_name_version"),
)

parents = Table(
    PARENTS_TABLE,
    metadata_obj,
    Column("child_id", String(MAX_ID_LENGTH), ForeignKey(f"{ENVS_TABLE}.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("parent_id", String(MAX_ID_LENGTH), nullable=False),
)
