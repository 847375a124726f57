"""A small benchmark data file cannot make the evaluator hold gigabytes: a LiveCodeBench
problem whose hidden tests are 0.8 MB as published (base64 of zlib of a pickled JSON string)
and 630 MB decompressed peaked ``spade eval`` at about 1.9 GB, decompressing, unpickling and
parsing it whole when the suite listed its items. Now a problem's tests are decoded when a
sample plays it, counted before they are kept, and past the limit (``-o max_tests_mb=``, 64
by default) the problem's samples fail with the reason while every other problem is
evaluated; the evaluator's peak stays within :data:`PEAK_BOUND_MB` of where it stood.

The evaluation runs in a fresh process (``peak_eval.py``) that measures its own ``VmHWM``."""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from spade_eval.benchmarks import BenchmarkDataError

#: What evaluating the hostile file may add to the evaluator's peak memory.
PEAK_BOUND_MB = 64
PEAK_SCRIPT = Path(__file__).with_name("peak_eval.py")
ROOT = Path(__file__).resolve().parents[3]
SUM_TEST = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]


def compressed_tests_bomb(decompressed: int = 630_000_000) -> str:
    """A published test list (base64(zlib(pickle(JSON text)))) of one test whose input is
    ``decompressed`` bytes of ``1 1 1 ...``: 0.8 MB as published. The pickle (protocol 3:
    ``X``, a 4-byte length, the text) is written a chunk at a time, never held whole."""
    head = b'[{"input": "'
    tail = b'", "output": "3\\n", "testtype": "stdin"}]'
    body = decompressed - len(head) - len(tail)
    packer = zlib.compressobj(9)
    parts = [packer.compress(b"\x80\x03X" + struct.pack("<I", len(head) + body + len(tail)) + head)]
    chunk = b"1 " * (1 << 19)
    for _ in range(body // len(chunk)):
        parts.append(packer.compress(chunk))
    parts.append(packer.compress(b"1" * (body % len(chunk)) + tail + b"q\x00."))
    parts.append(packer.flush())
    return base64.b64encode(b"".join(parts)).decode()


def _row(qid: str, private: str) -> dict:
    return {"question_id": qid, "question_content": f"{qid}: print the sum of two integers.", "starter_code": "",
            "contest_date": "2025-03-01", "public_test_cases": json.dumps(SUM_TEST), "private_test_cases": private,
            "metadata": "{}"}


def test_a_small_file_whose_tests_decompress_to_gigabytes_fails_alone_within_bounded_memory(tmp_path: Path) -> None:
    fine = json.dumps([{"input": "5 7\n", "output": "12\n", "testtype": "stdin"}])
    data = tmp_path / "lcb.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in [_row("bomb", compressed_tests_bomb()), _row("fine", fine)]))
    assert data.stat().st_size < 900_000, "the attack is a small file"
    warm = tmp_path / "warm.jsonl"
    warm.write_text(json.dumps(_row("warm", fine)) + "\n")
    run = subprocess.run([sys.executable, str(PEAK_SCRIPT), str(warm), str(data)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    by_label = {e["label"]: e for e in result["episodes"]}
    assert by_label["fine"]["success"] and by_label["fine"]["error"] is None, result
    assert "problem bomb: its tests decompress to more than 64 MiB" in (by_label["bomb"]["error"] or ""), result
    assert result["grown_mb"] < PEAK_BOUND_MB, f"peak grew {result['grown_mb']:.0f} MB"


@pytest.mark.parametrize(("published", "reason"), [
    (json.dumps([SUM_TEST[0]] * 10_001), "at most 10000 tests"),
    (json.dumps([[1, 2]]), "test 1 is not an object with text input and output"),
    (json.dumps([{"input": "x" * (16 << 20 | 1), "output": ""}]), "input or output over 16777216 characters"),
    ("[" * 100_000, "nested too deeply"),
    (base64.b64encode(zlib.compress(b"\x80\x03K\x01.")).decode(), "holds a int, not JSON text"),
    ("not base64 !", "cannot be read"),
])
def test_each_malformed_test_list_is_a_clear_error_of_its_problem(published: str, reason: str) -> None:
    from spade_eval.livecodebench import _tests

    with pytest.raises(BenchmarkDataError, match=reason):
        _tests(published)
