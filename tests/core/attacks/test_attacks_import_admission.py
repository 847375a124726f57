"""A pool's word is not admission: on every path ``spade import`` reads, a row that records
itself as ``admitted`` (in any of the ways a row can say so) is stored as a candidate
unless ``--trust``; ``--status admitted`` admits only what the validation pipeline passes.

The rule lives in one place (``spade_core.app.importer.prepare``), so every path and every
encoding of the claim is checked here against the same expectations.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.app.importer import ImportOptions, RawItem, prepare
from spade_core.metadata import EnvStatus

from ..cli_support import open_store
from .pools import CRASHY, ENCODINGS, GOOD, PATHS, claim, import_all

NOTE = "recorded as admitted in the dataset, read as a candidate"


def claiming_rows(encoding: str) -> list[dict]:
    return [claim(encoding, GOOD, "guess"), claim(encoding, CRASHY, "crashy")]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("path", sorted(PATHS))
def test_without_trust_a_recorded_admission_is_read_as_a_candidate(
    path: str, encoding: str, tmp_path: Path, spade_home: Path
) -> None:
    sources = PATHS[path](tmp_path, claiming_rows(encoding))
    code, report = import_all(sources)
    assert code == 0, report
    assert [r["outcome"] for r in report] == ["imported", "imported"], report
    assert all(any(NOTE in n for n in r["notes"]) for r in report), report
    with open_store() as store:
        assert store.admitted_ids() == [], "nothing was validated, so nothing is admitted"
        assert {m.status for m in store.find(limit=10)} == {EnvStatus.candidate}
        assert store.count() == 2


@pytest.mark.parametrize("path", sorted(PATHS))
def test_trust_keeps_the_recorded_status(path: str, tmp_path: Path, spade_home: Path) -> None:
    code, report = import_all(PATHS[path](tmp_path, claiming_rows("export-doc")), "--trust")
    assert code == 0 and [r["outcome"] for r in report] == ["imported", "imported"], report
    assert not any(NOTE in n for r in report for n in r["notes"])
    with open_store() as store:
        assert sorted(store.admitted_ids()) == sorted(r["env_id"] for r in report)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_status_admitted_admits_only_what_validation_passes(path: str, tmp_path: Path, spade_home: Path) -> None:
    code, report = import_all(PATHS[path](tmp_path, claiming_rows("flat")), "--status", "admitted")
    assert code == 1, report
    good, crashy = report
    assert good["outcome"] == "imported", good
    assert (crashy["outcome"], crashy["stage"]) == ("rejected", "contract"), crashy
    with open_store() as store:
        assert store.admitted_ids() == [good["env_id"]]
        assert store.get(good["env_id"]).validation.passed, "the import's own report, not the row's"
        assert store.count() == 1


@pytest.mark.parametrize("path", sorted(PATHS))
def test_status_candidate_overrides_a_recorded_admission_even_with_trust(path: str, tmp_path: Path, spade_home: Path) -> None:
    code, report = import_all(PATHS[path](tmp_path, claiming_rows("metadata-object")), "--status", "candidate", "--trust")
    assert code == 0, report
    with open_store() as store:
        assert store.admitted_ids() == [] and store.count() == 2


def test_the_api_defaults_to_the_same_rule() -> None:
    """Below the CLI: ``prepare`` without ``ImportOptions(trust=True)`` never admits on the data's word."""
    for encoding in ENCODINGS:
        row = claim(encoding, GOOD, "guess")
        assert prepare(RawItem("row", row)).metadata.status == EnvStatus.candidate, encoding
        assert prepare(RawItem("row", row), ImportOptions(trust=True)).metadata.status == EnvStatus.admitted
        assert prepare(RawItem("row", row), ImportOptions(status=EnvStatus.admitted)).metadata.status == EnvStatus.admitted
