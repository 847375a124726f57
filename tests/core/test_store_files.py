"""Bad store files and schema versions: every failure is a StoreError naming the store,
never a traceback from inside SQLAlchemy, and nothing is written to a store we refuse."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from spade_core.errors import StoreError
from spade_core.metadata import code_hash
from spade_core.store import STORE_SCHEMA_VERSION, EnvStore, migrations
from spade_core.store.database import open_database

from .test_store_backends import env_source, meta


def url(path: Path) -> str:
    return f"sqlite:///{path}"


def filled_store(path: Path, n: int = 300) -> None:
    with EnvStore(url(path)) as store:
        store.add_many((env_source(f"e{i}" * 20), meta(f"e{i}", description="d" * 200)) for i in range(n))


@pytest.mark.parametrize("create", [True, False])
def test_a_file_of_garbage_bytes_is_refused_naming_the_file(tmp_path: Path, create: bool) -> None:
    path = tmp_path / "store.db"
    garbage = bytes(range(256)) * 64
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match=f"{path}: .*not a SQLite database") as info:
        EnvStore(url(path), create=create)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert path.read_bytes() == garbage  # not "repaired", not overwritten


def test_a_truncated_store_gives_a_store_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    filled_store(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError, match=str(path)):
        with EnvStore(url(path), create=False) as store:
            store.find()  # reading every row reaches the missing pages


def test_a_store_truncated_inside_its_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    filled_store(path, n=5)
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(StoreError, match=str(path)):
        EnvStore(url(path), create=False)


def test_a_missing_directory_with_create_false_is_named(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "store.db"
    with pytest.raises(StoreError, match=f"{path}: store directory does not exist"):
        EnvStore(url(path), create=False)
    assert not (tmp_path / "no").exists()


def test_a_missing_file_with_create_false_is_named_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with pytest.raises(StoreError, match=f"{path}: store file does not exist"):
        EnvStore(url(path), create=False)
    assert not path.exists()


def test_create_makes_the_missing_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "store.db"
    with EnvStore(url(path)) as store:
        assert store.schema_version() == STORE_SCHEMA_VERSION
        assert store.path == path
    assert path.is_file()


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=f"{tmp_path}: is a directory"):
        EnvStore(url(tmp_path))


def test_an_empty_database_opened_without_create_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    with pytest.raises(StoreError, match="is not a SPADE store"):
        EnvStore(url(path), create=False)


def test_a_database_of_someone_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE envs (x INTEGER)")
    with pytest.raises(StoreError, match="has store tables \\(envs\\) but no spade_schema table"):
        EnvStore(url(path))


@pytest.mark.parametrize("bad", ["not a url", "nosuchdialect://x/y"])
def test_an_invalid_url_is_a_store_error(bad: str) -> None:
    with pytest.raises(StoreError, match="store URL"):
        EnvStore(bad)


def test_an_unreachable_server_is_a_store_error_naming_it_without_password() -> None:
    with pytest.raises(StoreError) as info:
        EnvStore("postgresql+psycopg://someone:secret@127.0.0.1:1/nowhere?connect_timeout=2")
    assert "127.0.0.1:1/nowhere" in str(info.value)
    assert "secret" not in str(info.value)


def test_sqlite_stores_use_write_ahead_logging(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    EnvStore(url(path)).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# --- schema versions -----------------------------------------------------------------------


def test_a_store_from_a_newer_spade_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    filled_store(path, n=3)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO spade_schema (version, description, applied_at) VALUES (?, 'future', 'later')",
            (STORE_SCHEMA_VERSION + 5,),
        )
    before = path.read_bytes()
    with pytest.raises(StoreError, match=f"schema version {STORE_SCHEMA_VERSION + 5} is newer.*upgrade spade-core"):
        EnvStore(url(path))
    assert path.read_bytes() == before


def _version_1_store(path: Path) -> None:
    """A store as the first schema version wrote it, with rows (lineage only in documents)."""
    db = open_database(url(path), create=True)

    def work(conn):  # type: ignore[no-untyped-def]
        migrations.migrate(conn, where=str(path), target=1)
        from spade_core.store import codec
        from spade_core.store.schema import blobs, envs

        for name, parents in (("root", []), ("kid", ["root-v1"]), ("grandkid", ["kid-v1"])):
            source = env_source(name)
            m = meta(name, parent_ids=parents).model_copy(
                update={"code_hash": code_hash(source)}
            )
            conn.execute(blobs.insert().values(code_hash=m.code_hash, source=source, size=len(source), created_at="t"))
            conn.execute(envs.insert().values(codec.row_values(m, codec.encode(m))))

    db.write("building a version 1 store", work)
    db.dispose()


def test_opening_an_older_store_migrates_it_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _version_1_store(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT MAX(version) FROM spade_schema").fetchone()[0] == 1
    with EnvStore(url(path), create=False) as store:
        assert store.schema_version() == STORE_SCHEMA_VERSION
        assert store.count() == 3
        # migration 2 backfilled the lineage edges from the stored documents
        assert [m.id for m in store.lineage("grandkid-v1")] == ["kid-v1", "root-v1"]
        assert [m.id for m in store.descendants("root-v1")] == ["kid-v1", "grandkid-v1"]
    with sqlite3.connect(path) as conn:
        applied = [r[0] for r in conn.execute("SELECT version FROM spade_schema ORDER BY version")]
    assert applied == list(range(1, STORE_SCHEMA_VERSION + 1))


def test_migrations_are_ordered_and_numbered_without_gaps() -> None:
    assert [m.version for m in migrations.MIGRATIONS] == list(range(1, STORE_SCHEMA_VERSION + 1))


def test_registration_reads_admitted_ids_from_the_covering_index_alone(tmp_path: Path) -> None:
    from spade_core.store.layout import ADMITTED_PREFIXED_SQL

    path = tmp_path / "store.db"
    filled_store(path, n=3)
    with sqlite3.connect(path) as conn:
        plan = " ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + ADMITTED_PREFIXED_SQL, ("spade/",)))
    assert "COVERING INDEX ix_envs_status_id" in plan


def test_the_stdlib_fast_path_and_the_store_agree_on_admitted_ids(tmp_path: Path) -> None:
    from spade_core.store import sqlite_reader

    path = tmp_path / "store.db"
    with EnvStore(url(path)) as store:
        for i in range(30):
            store.add(env_source(f"q{i}"), meta(f"q{i}", status=["candidate", "admitted", "retired"][i % 3]))
        expected = store.admitted_ids()
    assert len(expected) == 10
    assert sqlite_reader.admitted_ids(path) == expected
    assert sorted(sqlite_reader.admitted_prefixed_ids(path, "spade/")) == sorted(f"spade/{i}" for i in expected)


@pytest.mark.parametrize("folder", ["100% sure", "what?", "#1", "dé jà vu", "a%3Fb", "x?mode=rwc"])
def test_the_stdlib_fast_path_opens_stores_in_folders_with_uri_characters(tmp_path: Path, folder: str) -> None:
    """The fast path opens the store read-only through a ``file:`` URI: characters that
    mean something in a URI must still name the file (and never open another one)."""
    from spade_core.store import sqlite_reader

    plain = tmp_path / "plain"
    plain.mkdir()
    with EnvStore(url(plain / "store.db")) as store:
        for i in range(4):
            store.add(env_source(f"u{i}"), meta(f"u{i}"))
        expected = store.admitted_ids()
    odd = tmp_path / folder
    plain.rename(odd)
    assert sqlite_reader.admitted_ids(odd / "store.db") == expected
    assert not (tmp_path / "plain").exists()


def test_under_ci_a_missing_postgres_url_fails_the_run_instead_of_skipping(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "CI": "true"}
    env.pop("SPADE_TEST_POSTGRES_URL", None)
    here = Path(__file__)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", str(here.with_name("test_store.py")), "-q", "-p", "no:cacheprovider",
         "-k", "test_versions_of_an_unknown_name_is_empty"],
        capture_output=True, text=True, env=env, cwd=here.parents[2], timeout=300,
    )
    assert out.returncode != 0
    assert "CI=true but SPADE_TEST_POSTGRES_URL is not set" in out.stdout
    assert "1 passed" in out.stdout  # the SQLite variant still ran
