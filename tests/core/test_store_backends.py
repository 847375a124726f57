"""Store backends the store tests run against (fixtures shared by tests/core/test_store*.py).

Every store test runs on SQLite, and on PostgreSQL when ``SPADE_TEST_POSTGRES_URL`` is set
(``eval "$(bash scripts/start-postgres.sh)"`` starts one). Under ``CI=true`` a missing URL
fails the run instead of silently skipping the team path. Each test gets its own empty
PostgreSQL schema, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from spade_core.metadata import EnvMetadata

POSTGRES_ENV = "SPADE_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def postgres_base_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {POSTGRES_ENV} is not set: run scripts/start-postgres.sh first", pytrace=False)
        pytest.skip(f"{POSTGRES_ENV} not set (eval \"$(bash scripts/start-postgres.sh)\" to run these)")
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema (dropped after the test)."""
    import sqlalchemy

    base = postgres_base_url()
    schema = f"spade_test_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(base)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty store on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_url: str) -> Iterator:
    from spade_core.store import EnvStore

    with EnvStore(store_url) as opened:
        yield opened


def env_source(tag: str = "") -> str:
    """A small, valid reference-format environment; ``tag`` makes the code distinct."""
    return (
        f"# {tag}\n"
        "class CounterEnv:\n"
        "    def reset(self, seed=None):\n"
        "        self.n = 0\n"
        "        return 'count to 3', {}\n"
        "    def step(self, action):\n"
        "        self.n += 1\n"
        "        done = self.n >= 3\n"
        "        return str(self.n), 1.0 if done else 0.0, done, False, {}\n"
        "    def solution(self):\n"
        "        return ['\\\\boxed{+1}'] * 3\n"
    )


def meta(name: str = "counter", **fields: object) -> EnvMetadata:
    fields.setdefault("domain", "games")
    fields.setdefault("skill", "counting")
    return EnvMetadata(name=name, **fields)
