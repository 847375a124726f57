"""One bad row is that row's failure, never the import's: on every path, rows with paths
out of the dataset, nesting deep enough to exhaust Python's recursion, invalid UTF-8,
over-long lines and rows, odd types, and broken metadata each fail with their reason
while the good rows around them import; no traceback, no RecursionError.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spade_core.app.dataset_files import MAX_ROW_BYTES
from spade_core.app.importer import RawItem, import_items

from ..cli_support import open_store
from .pools import (
    GOOD,
    PATHS,
    exported_doc,
    hf_cache,
    import_all,
    import_json,
    write_export,
)


def variant(i: int) -> str:
    """GOOD with a distinct code hash, so that no two rows are the same environment."""
    return GOOD + f"\n# variant {i}\n"


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


#: (row, a part of its reason, whether the row can be written to Parquet: a column
#: nested deeper than pyarrow's schema limit is refused with the whole file).
BAD_ROWS: list[tuple[dict, str, bool]] = [
    ({"hint": nested(200)}, "nested more than 64 levels", False),
    ({"metadata": "[" * 100_000 + "]" * 100_000}, "nested more than 64 levels", True),
    ({"max_turns": "many"}, "max_turns", True),
    ({"status": ["admitted"]}, "status", True),
    ({"parent_ids": 5}, "parent_ids", True),
    ({"reward_range": "wide"}, "reward_range", True),
    ({"tags": 5}, "tags", True),
    ({"code": "class BrokenEnv(:\n    pass\n"}, "syntax error", True),
    ({"code": "x = 1\n"}, "no top-level class", True),
]


def rows_for(path: str) -> tuple[list[dict], list[str]]:
    parquet = "parquet" in path or path == "folder"
    rows = [{"code": variant(0), "name": "first", "domain": "games"}]
    reasons = []
    for i, (bad, reason, in_parquet) in enumerate(BAD_ROWS, start=1):
        if parquet and not in_parquet:
            continue
        rows.append({"code": variant(i), "name": f"bad{i}", "domain": "games", **bad})
        reasons.append(reason)
    rows.append({"code": variant(99), "name": "last", "domain": "games"})
    return rows, reasons


ROW_PATHS = sorted(p for p in PATHS if "export" not in p)  # an export's rows are EnvMetadata documents: below


@pytest.mark.parametrize("path", ROW_PATHS)
def test_each_bad_row_fails_with_its_reason_and_the_rest_import(path: str, tmp_path: Path, spade_home: Path) -> None:
    rows, reasons = rows_for(path)
    code, report = import_all(PATHS[path](tmp_path, rows))
    assert code == 1, report
    imported = [r for r in report if r["outcome"] == "imported"]
    failed = [r for r in report if r["outcome"] == "failed"]
    assert len(imported) == 2 and len(failed) == len(reasons), report
    unmatched = [r["reason"] for r in failed]
    for reason in reasons:
        hit = next((u for u in unmatched if reason in u), None)
        assert hit is not None, (reason, unmatched)
        unmatched.remove(hit)
    with open_store() as store:
        names = sorted(m.name.split("_")[0] for m in store.find(limit=100))
        assert names == ["first", "last"] or sorted(m.class_name for m in store.find(limit=100)) == ["GuessNumberEnv"] * 2


#: Lines no JSON object comes out of, as bytes, with a part of their reason.
BAD_LINES: list[tuple[bytes, str]] = [
    (b"[" * 200_000, "nested more than 64 levels"),
    (b'{"code": "' + b"\xff\xfe" * 10 + b'"}', "not UTF-8"),
    (b'{"code": "' + b"x" * (MAX_ROW_BYTES + 10) + b'"}', "longer than"),
    (b'{"code": ', "malformed JSON"),
    (b"[1, 2, 3]", "object, got list"),
]


def jsonl_bytes() -> bytes:
    good = [json.dumps({"code": variant(i), "name": f"g{i}", "domain": "games"}).encode() for i in (0, 99)]
    return b"\n".join([good[0], *(line for line, _ in BAD_LINES), good[1]]) + b"\n"


@pytest.mark.parametrize("path", ["jsonl", "folder", "hf-table-jsonl", "hf-table-json", "hf-cache-table"])
def test_each_bad_line_fails_with_its_reason_and_the_rest_import(path: str, tmp_path: Path, spade_home: Path) -> None:
    data = jsonl_bytes()
    if path == "jsonl":
        (tmp_path / "pool.jsonl").write_bytes(data)
        source = str(tmp_path / "pool.jsonl")
    elif path == "folder":
        (tmp_path / "pool").mkdir()
        (tmp_path / "pool" / "rows.jsonl").write_bytes(data)
        (tmp_path / "pool" / "env.py").write_text(variant(7))
        source = str(tmp_path / "pool")
    else:
        table = tmp_path / "table" / "data"
        table.mkdir(parents=True)
        (table / ("train.json" if path == "hf-table-json" else "train.jsonl")).write_bytes(data)
        source = "hf:" + str(table.parent)
        if path == "hf-cache-table":
            source = "hf:" + str(hf_cache(tmp_path / "hf-cache", "spade-rl/lines", table.parent))
    code, report = import_json(source, "--domain", "games")
    assert code == 1, report
    failed = [r for r in report if r["outcome"] == "failed"]
    assert [r["origin"].rsplit(":", 1)[-1] for r in failed] == ["2", "3", "4", "5", "6"]
    for row, (_, reason) in zip(failed, BAD_LINES, strict=True):
        assert reason in row["reason"], (reason, row)
    assert sum(r["outcome"] == "imported" for r in report) == (3 if path == "folder" else 2)


def test_a_json_document_too_deep_to_parse_whole_is_read_row_by_row(tmp_path: Path, spade_home: Path) -> None:
    good = [json.dumps({"code": variant(i), "name": f"g{i}"}) for i in (0, 1)]
    text = "[" + good[0] + ", " + "[" * 100_000 + "]" * 100_000 + ", " + good[1] + "]"
    (tmp_path / "table").mkdir()
    (tmp_path / "table" / "rows.json").write_text(text)
    code, report = import_json("hf:./table", "--domain", "games")
    assert code == 1
    assert [r["outcome"] for r in report] == ["imported", "failed", "imported"]
    assert "nested more than 64 levels" in report[1]["reason"]


@pytest.mark.parametrize("path", ["parquet", "hf-table-parquet"])
def test_a_parquet_row_over_the_row_limit_fails_alone(path: str, tmp_path: Path, spade_home: Path) -> None:
    big = variant(5) + "# " + os.urandom(MAX_ROW_BYTES // 2 + 1000).hex() + "\n"  # incompressible: no bomb
    rows = [{"code": variant(i), "name": f"r{i}", "domain": "games"} for i in range(20)]
    rows[9] = {"code": big, "name": "big", "domain": "games"}
    (source,) = PATHS[path](tmp_path, rows)
    code, report = import_json(source)
    assert code == 1
    assert [r["outcome"] for r in report].count("imported") == 19
    bad = next(r for r in report if r["outcome"] == "failed")
    assert bad["origin"].endswith("#9") and f"the limit of one row is {MAX_ROW_BYTES}" in bad["reason"], bad


@pytest.mark.parametrize("cached", [False, True])
def test_an_exports_bad_documents_fail_alone(cached: bool, tmp_path: Path, spade_home: Path) -> None:
    folder = write_export(tmp_path / "export", [{"code": variant(0), "metadata": json.dumps(exported_doc(variant(0), "x"))}])
    docs = [(variant(i), exported_doc(variant(i), f"e{i}")) for i in range(6)]
    rows = [
        (docs[0][0], json.dumps(docs[0][1])),
        (docs[1][0], "[" * 100_000 + "]" * 100_000),
        (docs[2][0], "{not json"),
        (docs[3][0], json.dumps({**docs[3][1], "max_turns": 0})),
        (docs[4][0] + "# edited\n", json.dumps(docs[4][1])),
        (docs[5][0], json.dumps({**docs[5][1], "parent_ids": nested(100)})),
        (variant(9), json.dumps(exported_doc(variant(9), "e9"))),
    ]
    data = folder / "data" / "train-00000-of-00001.parquet"
    pq.write_table(pa.table({"code": [c for c, _ in rows], "metadata": [m for _, m in rows]}), data)
    source = "hf:" + str(hf_cache(tmp_path / "hf-cache", "o/e", folder) if cached else folder)
    code, report = import_json(source)
    assert code == 1
    assert [r["outcome"] for r in report] == ["imported", "failed", "failed", "failed", "failed", "failed", "imported"]
    reasons = [r["reason"] for r in report[1:6]]
    for reason, part in zip(
        reasons, ["nested more than 64", "not valid JSON", "max_turns", "code_hash", "nested more than 64"], strict=True
    ):
        assert part in reason, (part, reason)


def test_the_api_turns_any_odd_row_into_a_failed_outcome(spade_home: Path) -> None:
    """Rows built by a caller of ``import_items`` (not read from a file) are held to the same rule."""
    odd = [
        RawItem("a", {"code": variant(0), "name": "ok", "domain": "games"}),
        RawItem("b", {"code": variant(1), "domain": "games", "tags": nested(5000)}),
        RawItem("c", {"code": variant(2), "domain": "games", "name": nested(50)}),
        RawItem("d", ["not", "a", "dict"]),  # type: ignore[arg-type]
        RawItem("e", {"code": variant(3), "domain": "games", "metadata": {"schema_version": 1, "code_hash": []}}),
    ]
    with open_store() as store:
        report = import_items(store, odd)
    assert [o.outcome for o in report.outcomes] == ["imported", "failed", "imported", "failed", "failed"]
    assert "nested" in report.outcomes[1].reason and "must be an object" in report.outcomes[3].reason
