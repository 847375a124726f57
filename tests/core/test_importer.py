"""The importer's rules, below the CLI: names, column aliases, and the export row format
read back exactly (for all valid metadata)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_core.app.exporter import export_row
from spade_core.app.importer import (
    ImportOptions,
    ItemError,
    RawItem,
    name_from_class,
    prepare,
    read_items,
    sanitize_name,
)
from spade_core.metadata import NAME_RE, EnvMetadata, EnvStatus, code_hash

from .conftest import REFERENCE_ENVS
from .strategies import env_metadata

HANOI = (REFERENCE_ENVS / "tower_of_hanoi.py").read_text(encoding="utf-8")


@given(st.text(max_size=200))
def test_any_label_sanitises_to_a_valid_idempotent_name(label: str) -> None:
    name = sanitize_name(label)
    assert NAME_RE.match(name)
    assert len(name) <= 120
    assert sanitize_name(name) == name


@pytest.mark.parametrize(
    "label, name",
    [
        ("spade/maze-v3", "maze"),
        ("tower-of-hanoi 3", "tower_of_hanoi_3"),
        ("  Sokoban  ", "Sokoban"),
        ("123abc", "env_123abc"),
        ("!!!", "env"),
        ("game.v2", "game.v2"),
    ],
)
def test_sanitise_examples(label: str, name: str) -> None:
    assert sanitize_name(label) == name


@pytest.mark.parametrize("cls, name", [("TowerOfHanoiEnv", "TowerOfHanoi"), ("Env", "Env"), ("MazeEnv2Env", "MazeEnv2")])
def test_names_from_class_names(cls: str, name: str) -> None:
    assert name_from_class(cls) == name


@pytest.mark.parametrize("code_key", ["code", "env_code", "source", "env_source", "program"])
@pytest.mark.parametrize("name_key", ["name", "env_name", "env_id", "id"])
def test_every_common_column_name_is_understood(code_key: str, name_key: str) -> None:
    row = {code_key: HANOI, name_key: "hanoi", "skill": "planning", "desc": "three pegs", "setting": "games"}
    item = prepare(RawItem("row", row))
    assert (item.metadata.name, item.metadata.skill, item.metadata.domain) == ("hanoi", "planning", "games")
    assert item.metadata.description == "three pegs"
    assert item.metadata.code_hash == code_hash(HANOI)
    assert not item.name_derived


def test_options_override_the_data_and_unknown_columns_are_reported() -> None:
    row = {"code": HANOI, "domain": "games", "skill": "a", "status": "candidate", "rating": 5, "author": "x"}
    item = prepare(RawItem("row", row), ImportOptions(domain="puzzles", skill="b", status=EnvStatus.admitted))
    assert (item.metadata.domain, item.metadata.skill, item.metadata.status) == ("puzzles", "b", EnvStatus.admitted)
    assert item.ignored == ("author", "rating")


@pytest.mark.parametrize(
    "row, reason",
    [
        ({"code": 42, "domain": "g"}, "column 'code' holds int, expected the source text"),
        ({"code": "x = 1\n", "domain": "g"}, "no top-level class whose name ends in 'Env'"),
        ({"code": "class AEnv:\n  pass\n" + "#" * 1_000_001, "domain": "g"}, "bytes (limit 1000000)"),
        ({"code": HANOI, "metadata": "{not json"}, "column 'metadata' is not valid JSON"),
        ({"code": HANOI, "metadata": [1]}, "column 'metadata' must hold a JSON object"),
        ({"code": HANOI, "domain": "g", "max_turns": "many"}, "max_turns: Input should be a valid integer"),
    ],
)
def test_unusable_rows_say_why(row: dict, reason: str) -> None:
    with pytest.raises(ItemError) as err:
        prepare(RawItem("pool.jsonl:7", row))
    assert reason in err.value.reason
    assert str(err.value).startswith("pool.jsonl:7: ")


@settings(max_examples=40, deadline=None)
@given(env_metadata())
def test_an_export_row_is_read_back_as_the_same_metadata(meta: EnvMetadata) -> None:
    meta = meta.model_copy(update={"code_hash": code_hash(HANOI)})
    row = json.loads(json.dumps(export_row(HANOI, meta)))
    back = prepare(RawItem("row", row), ImportOptions(trust=True))
    assert back.source == HANOI
    assert back.metadata == meta
    untrusted = prepare(RawItem("row", row)).metadata
    assert untrusted == (meta.model_copy(update={"status": EnvStatus.candidate}) if meta.status == EnvStatus.admitted else meta)


def test_a_published_style_parquet_pool_is_read(tmp_path: Path) -> None:
    path = tmp_path / "pool.parquet"
    table = pa.Table.from_pylist(
        [
            {"env_id": "hanoi_1", "env_code": HANOI, "skill": "planning", "description": "pegs"},
            {"env_id": "broken", "env_code": "class BEnv(:\n", "skill": "x", "description": ""},
        ]
    )
    pq.write_table(table, path)
    items = list(read_items(path))
    assert [i.origin for i in items] == ["pool.parquet#0", "pool.parquet#1"]
    good = prepare(items[0], ImportOptions(domain="games"))
    assert (good.metadata.id, good.metadata.description) == ("hanoi_1-v1", "pegs")
    with pytest.raises(ItemError, match="syntax error at line 1"):
        prepare(items[1], ImportOptions(domain="games"))


def test_a_sidecar_json_supplies_metadata_for_a_py_file(tmp_path: Path) -> None:
    (tmp_path / "hanoi.py").write_text(HANOI)
    (tmp_path / "hanoi.json").write_text(json.dumps({"name": "hanoi", "skill": "planning", "domain": "games"}))
    (tmp_path / "other.py").write_text(HANOI.replace("n_disks=3", "n_disks=4"))
    (tmp_path / "other.json").write_text("{broken")
    items = list(read_items(tmp_path))
    assert prepare(items[0]).metadata.id == "hanoi-v1"
    with pytest.raises(ItemError, match="metadata file other.json is not valid JSON"):
        prepare(items[1])


def test_a_store_failure_while_writing_stops_the_batch_and_says_where() -> None:
    """A store that fails on write (a test double: the disk-full case is hard to make real)."""
    from spade_core.app.importer import import_items
    from spade_core.errors import StoreError

    class FailingStore:
        def count(self, **filters: object) -> int:
            return 0

        def versions(self, name: str) -> list:
            return []

        def add_many(self, items: list) -> list:
            raise StoreError("store.db: database or disk is full")

    seen = []
    rows = [RawItem("bad.jsonl:1", {"code": "nope"}), RawItem("p.jsonl:2", {"code": HANOI, "domain": "g"})]
    with pytest.raises(StoreError) as err:
        import_items(FailingStore(), rows, on_item=seen.append)
    assert "import stopped writing p.jsonl:2..p.jsonl:2 after 1 item(s): store.db: database or disk is full" in str(err.value)
    assert [o.outcome for o in seen] == ["failed"], "items finished before the failure were reported"


def test_a_foreign_metadata_object_counts_as_flat_columns() -> None:
    row = {
        "env_code": HANOI,
        "metadata": json.dumps({"env_name": "hanoi", "skill": "planning", "win_rate": 0.4, "domain": "games"}),
        "skill": "strategy",
    }
    item = prepare(RawItem("row", row))
    assert (item.metadata.name, item.metadata.skill, item.metadata.domain) == ("hanoi", "strategy", "games")
    assert item.ignored == ("win_rate",)
