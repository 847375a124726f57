"""A small Parquet file cannot make import hold its decompressed size: a few kilobytes that
decode to hundreds of megabytes (one value repeated into many rows through a dictionary,
one huge value compressed away, a list of millions of run-length-encoded elements) are
refused as decompression bombs, on every path that reads Parquet, while the importing
process's peak memory stays within :data:`PEAK_BOUND_MB` of where it stood.

Each import runs in a fresh process (``peak_import.py``) that measures its own ``VmHWM``.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ..cli_support import open_store
from .pools import GOOD, exported_doc, hf_cache, write_export, write_jsonl

#: Peak memory an import may add for reading a hostile file (the bombs decode to 128 MB
#: and more; reading them whole, as import did, took all of it and more).
PEAK_BOUND_MB = 64
PEAK_SCRIPT = Path(__file__).with_name("peak_import.py")
ROOT = Path(__file__).resolve().parents[3]


def dictionary_bomb(n: int = 300_000, width: int = 2_000) -> pa.Table:
    """One 2 KB value repeated into 300,000 rows: 600 MB decoded, a few KB stored."""
    value = "class BombEnv:\n    '''" + "x" * width + "'''\n"
    code = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value]))
    doc = json.dumps(exported_doc(value, "bomb"))
    meta = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([doc]))
    return pa.table({"code": code, "metadata": meta})


def huge_value_bomb(size: int = 64 * 1024 * 1024) -> pa.Table:
    """Two rows of one 64 MB value: 128 MB decoded from a few KB (zstd)."""
    value = "class BombEnv:\n    pass\n#" + "x" * size
    return pa.table({"code": [value, value], "metadata": ["{}", "{}"]})


def long_list_bomb(n: int = 50_000_000) -> pa.Table:
    """One row whose tags list holds 50 million run-length-encoded zeros."""
    tags = pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), pa.array(np.zeros(n, dtype=np.int8)))
    return pa.table({"code": [GOOD], "metadata": ["{}"], "tags": tags})


def struct_list_bomb(n: int = 3_900_000) -> pa.Table:
    """One row whose tags list holds 3.9 million structs of one boolean: 600 bytes stored,
    under a megabyte of Arrow bits and offsets, and 3.9 million dicts (over 1 GB) once
    converted to Python, which the budget used to count at Arrow's width (import peaked
    at 1,066 MB before refusing the row)."""
    tags = pa.ListArray.from_arrays(pa.array([0, n], pa.int32()),
                                    pa.StructArray.from_arrays([pa.array(np.zeros(n, dtype=bool))], names=["a"]))
    return pa.table({"code": [GOOD], "metadata": ["{}"], "tags": tags})


def plain_dictionary_bomb() -> pa.Table:
    """The dictionary bomb without Arrow's schema in the file: it reads back as plain
    strings, so pyarrow itself expands every row as it decodes."""
    return dictionary_bomb().replace_schema_metadata({b"store_schema": b"no"})


BOMBS: dict[str, Callable[[], pa.Table]] = {
    "dictionary": dictionary_bomb,
    "dictionary-plain": plain_dictionary_bomb,
    "huge-value": huge_value_bomb,
    "long-list": long_list_bomb,
    "struct-list": struct_list_bomb,
}


def write_bomb(table: pa.Table, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    store_schema = (table.schema.metadata or {}).get(b"store_schema") != b"no"
    pq.write_table(table.replace_schema_metadata(None), path, compression="zstd", store_schema=store_schema)
    return path


def place(path_kind: str, table: pa.Table, tmp: Path) -> str:
    """The bomb as the data file of one Parquet-reading path; the source to import."""
    tmp.mkdir(parents=True, exist_ok=True)
    if path_kind == "parquet":
        return str(write_bomb(table, tmp / "bomb.parquet"))
    if path_kind == "folder":
        write_jsonl(tmp / "pool" / "a.jsonl", [{"code": GOOD.replace("GuessNumberEnv", "FineEnv"), "domain": "games"}])
        write_bomb(table, tmp / "pool" / "b.parquet")
        return str(tmp / "pool")
    if path_kind == "hf-table":
        write_bomb(table, tmp / "table" / "data" / "train.parquet")
        return "hf:" + str(tmp / "table")
    if path_kind in ("hf-export", "hf-cache-export"):
        folder = write_export(tmp / "export", [{"code": GOOD}])
        write_bomb(table, folder / "data" / "train-00000-of-00001.parquet")
        if path_kind == "hf-cache-export":
            folder = hf_cache(tmp / "hf-cache", "spade-rl/bomb", folder)
        return "hf:" + str(folder)
    raise ValueError(path_kind)


def warm_up_table() -> pa.Table:
    """One good environment (code + its metadata document), named ``warm``."""
    code = GOOD.replace("GuessNumberEnv", "WarmEnv")
    return pa.table({"code": [code], "metadata": [json.dumps(exported_doc(code, "warm", status="candidate"))]})


def peak_import(tmp: Path, path_kind: str, source: str, *flags: str) -> dict:
    """Import ``source`` in a fresh process after a warm-up import of a good dataset laid
    out the same way (so libraries and kernels are loaded before the measure)."""
    warm = place(path_kind, warm_up_table(), tmp / "warm")
    env = {**os.environ, "SPADE_HOME": str(tmp / "home"), "PYTHONPATH": str(ROOT)}
    (tmp / "home").mkdir(exist_ok=True)
    run = subprocess.run(
        [sys.executable, str(PEAK_SCRIPT), warm, source, *flags],
        capture_output=True, text=True, env=env, cwd=tmp, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("bomb", sorted(BOMBS))
@pytest.mark.parametrize("path_kind", ["parquet", "folder", "hf-table", "hf-export", "hf-cache-export"])
def test_a_parquet_decompression_bomb_is_refused_within_bounded_memory(
    bomb: str, path_kind: str, tmp_path: Path, spade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = place(path_kind, BOMBS[bomb](), tmp_path / "attack")
    stored = sum(p.stat().st_size for p in (tmp_path / "attack").rglob("*.parquet") if p.is_file())
    assert stored < 2_000_000, "the attack is a small file"
    result = peak_import(tmp_path, path_kind, source, "--domain", "games")
    assert result["exception"] is None, result
    assert result["grown_mb"] < PEAK_BOUND_MB, f"{bomb} via {path_kind}: peak grew {result['grown_mb']:.0f} MB"
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    if bomb in ("long-list", "struct-list") and "export" in path_kind:
        # An export is read for its code and metadata columns only: the bomb's column is never decoded.
        assert result["exit_code"] == 0, result
        return
    assert result["exit_code"] == 2, result
    assert "decompression bomb" in " ".join(result["output"].split()), result
    with open_store() as store:
        stored = store.find(limit=10)
        assert len(stored) == (2 if path_kind == "folder" else 1), "nothing of the bomb's import is stored"
        assert "BombEnv" not in {m.class_name for m in stored}


def test_a_good_parquet_pool_of_the_same_shape_imports_within_the_bound(tmp_path: Path, spade_home: Path) -> None:
    """The bound is not bought by refusing real pools: 300 distinct environments in one
    Parquet file (one row group) import, and reading them stays within the bound."""
    rows = [{"code": GOOD + f"\n# {i} " + os.urandom(2_000).hex() + "\n", "name": f"e{i}", "domain": "games"} for i in range(300)]
    path = tmp_path / "pool.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, compression="zstd")
    result = peak_import(tmp_path, "parquet", str(path))
    assert result["exit_code"] == 0, result
    assert result["outcomes"] == {"imported": 300}
    assert result["grown_mb"] < PEAK_BOUND_MB, result


def _varint(n: int, width: int = 0) -> bytes:
    """``n`` as a Thrift compact varint, padded to ``width`` bytes with continuation bytes
    (a valid, longer encoding of the same number)."""
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            break
    while len(out) < width:
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


def forged_footer_bomb(path: Path, n: int = 20_000_000) -> Path:
    """A file whose footer says its ``tags`` column holds one value in 64 bytes while its
    pages hold ``n`` int64 values (160 MB decoded): the footer's ``num_values`` and
    ``total_uncompressed_size`` rewritten in place (same length, padded varints). Every
    footer check passes it; a reader decodes what the pages say (1.1 KB of file grew
    import's peak by 742 MB)."""
    tags = pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), pa.array(np.zeros(n, dtype=np.int64)))
    write_bomb(pa.table({"code": [GOOD], "metadata": ["{}"], "tags": tags}), path)
    column = pq.ParquetFile(path).metadata.row_group(0).column(2)
    data = bytearray(path.read_bytes())
    footer = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    for true, fake in ((column.num_values, 1), (column.total_uncompressed_size, 64)):
        field = b"\x16" + _varint(true << 1)  # an i64 field one id after the last; zigzag of a positive n is 2n
        at = data.find(field, footer)
        assert at != -1 and data.find(field, at + 1) == -1, "the field is found once in the footer"
        data[at + 1 : at + len(field)] = _varint(fake << 1, len(field) - 1)
    path.write_bytes(bytes(data))
    forged = pq.ParquetFile(path).metadata.row_group(0).column(2)
    assert (forged.num_values, forged.total_uncompressed_size) == (1, 64)
    return path


def test_a_footer_that_understates_its_pages_is_refused_before_decoding(tmp_path: Path, spade_home: Path) -> None:
    source = forged_footer_bomb(tmp_path / "attack" / "bomb.parquet")
    assert source.stat().st_size < 20_000, "the attack is a small file"
    result = peak_import(tmp_path, "parquet", str(source), "--domain", "games")
    assert result["exception"] is None, result
    assert result["grown_mb"] < PEAK_BOUND_MB, f"peak grew {result['grown_mb']:.0f} MB"
    assert result["exit_code"] == 2, result
    message = " ".join(result["output"].split())
    assert "its pages hold 20000000 values" in message and "more than the footer's 1 values" in message, result


@pytest.mark.parametrize("options", [
    {}, {"use_dictionary": False}, {"data_page_version": "2.0"}, {"data_page_size": 1024, "row_group_size": 700},
    {"compression": "none", "write_statistics": False},
])
def test_the_page_headers_of_honest_files_agree_with_their_footers(tmp_path: Path, options: dict) -> None:
    """Every page of every column chunk read, values counted as the footer counts them."""
    from spade_core.app.parquet_pages import read_chunk_pages

    rng = np.random.default_rng(0)
    table = pa.table({
        "code": [f"class E{i}Env: pass  # {rng.integers(10**9)}" for i in range(2_000)],
        "score": rng.random(2_000),
        "tags": [[str(t) for t in range(i % 7)] for i in range(2_000)],
        "stats": [{"win": float(i % 3), "n": i} for i in range(2_000)],
    })
    path = tmp_path / "honest.parquet"
    pq.write_table(table, path, **{"compression": "zstd", **options})
    meta = pq.ParquetFile(path).metadata
    with path.open("rb") as handle:
        for g in range(meta.num_row_groups):
            for c in range(meta.row_group(g).num_columns):
                chunk = meta.row_group(g).column(c)
                start = min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o)
                pages = read_chunk_pages(handle, start, chunk.total_compressed_size)
                assert pages.values == chunk.num_values, (options, chunk.path_in_schema)
                assert 0 < pages.uncompressed_bytes <= chunk.total_uncompressed_size
