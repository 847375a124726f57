"""A writer of files writes only inside its target: links planted in the target folder (a
folder, a file, a temporary file's name) are refused with a clear error, and nothing
outside the folder changes. And an importer reports a bad item alone: one Harbor task with
a ``task.toml`` nested thousands deep, a ``reward_range`` that is not numbers, or a file
that cannot be read stops only that task; the others import.

Before, ``spade export --to-harbor DIR --force`` (and ``--to-atif``, and a folder export)
followed a link planted in ``DIR`` and wrote through it, outside ``DIR``; one bad task
stopped a whole ``spade import harbor:DIR``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ..cli_support import open_store, spade
from ..conftest import REFERENCE_ENVS

IDS = ["GuessNumber-v1", "LightSwitches-v1", "SwapSort-v1", "TowerOfHanoi-v1"]
BAIT = "not to be written over\n"


def _seed() -> None:
    run = spade("import", str(REFERENCE_ENVS), "--domain", "games", "--status", "admitted", "--trust", "--json")
    assert run.exit_code == 0, run.output


def _outside(tmp_path: Path) -> tuple[Path, Path]:
    """A folder and a file outside every export target, whose content must not change."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text(BAIT)
    return folder, folder / "keep.txt"


def _unchanged(folder: Path, before: set[str]) -> None:
    assert {p.name for p in folder.iterdir()} == before, sorted(p.name for p in folder.iterdir())
    assert (folder / "keep.txt").read_text() == BAIT


#: Links an attacker plants in a target folder, by export: (path inside the target, links
#: to the outside folder (True) or to the outside file (False), whether the export writes
#: at that path (then it is refused; else, at the temporary names the writer used to
#: write first, it is never touched)).
PLANTS: dict[str, list[tuple[str, bool, bool]]] = {
    "harbor": [("GuessNumber-v1", True, True), ("SwapSort-v1/environment", True, True),
               ("TowerOfHanoi-v1/task.toml", False, True), ("LightSwitches-v1/environment/spade/.env.py.tmp", False, False)],
    "dir": [("GuessNumber-v1.py", False, True), (".SwapSort-v1.json.tmp", False, False)],
}


@pytest.mark.parametrize(("kind", "plant"), [(k, i) for k, plants in PLANTS.items() for i in range(len(plants))])
def test_an_export_refuses_links_planted_in_its_target(kind: str, plant: int, tmp_path: Path, spade_home: Path) -> None:
    _seed()
    outside, bait = _outside(tmp_path)
    target = tmp_path / "target"
    first = spade("export", *(["--to-harbor", str(target)] if kind == "harbor" else [str(target), "--format", "dir"]))
    assert first.exit_code == 0, first.output
    rel, to_folder, written = PLANTS[kind][plant]
    planted = target / rel
    if planted.is_dir():
        import shutil

        shutil.rmtree(planted)
    else:
        planted.unlink(missing_ok=True)
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(outside if to_folder else bait)
    before = {p.name for p in outside.iterdir()}
    again = spade("export", *(["--to-harbor", str(target)] if kind == "harbor" else [str(target), "--format", "dir"]),
                  "--force")
    if written:
        assert again.exit_code != 0, again.output
        assert "link" in again.output and rel.split("/")[-1] in again.output.replace("\n", ""), again.output
    else:
        assert again.exit_code == 0, again.output
    _unchanged(outside, before)
    assert planted.is_symlink(), "the link is left as it was, not replaced"


def test_an_atif_export_refuses_a_link_planted_in_its_target(tmp_path: Path, spade_home: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    row = {"iteration": 1, "env_id": "GuessNumber-v1", "hinted": False, "return": 1.0, "turns": 1,
           "terminated": True, "truncated": False, "hung": False, "error": None, "rewards": [1.0],
           "messages": [{"role": "user", "content": "Guess."}, {"role": "assistant", "content": "\\boxed{1}"}]}
    (run_dir / "transcripts.jsonl").write_text(json.dumps(row) + "\n")
    outside, bait = _outside(tmp_path)
    target = tmp_path / "atif"
    assert spade("export", "--to-atif", str(target), "--run", str(run_dir)).exit_code == 0
    (planted,) = target.iterdir()
    planted.unlink()
    planted.symlink_to(bait)
    again = spade("export", "--to-atif", str(target), "--run", str(run_dir), "--force")
    assert again.exit_code != 0 and "link" in again.output, again.output
    _unchanged(outside, {"keep.txt"})


# --- importing: a bad item alone ---------------------------------------------------------------
BAD_TASKS: dict[str, Callable[[Path], None]] = {
    "nested arrays": lambda task: (task / "task.toml").write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n"),
    "nested tables": lambda task: (task / "task.toml").write_text("x = " + "{a = " * 20_000 + "1" + "}" * 20_000 + "\n"),
    "reward_range of words": lambda task: (task / "task.toml").write_text(
        (task / "task.toml").read_text().replace("reward_range = [", 'reward_range = ["low", "high", ')),
}


@pytest.mark.parametrize("damage", list(BAD_TASKS))
def test_one_bad_harbor_task_fails_alone_and_the_others_import(damage: str, tmp_path: Path, spade_home: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _seed()
    tasks = tmp_path / "tasks"
    assert spade("export", "--to-harbor", str(tasks)).exit_code == 0
    BAD_TASKS[damage](tasks / "SwapSort-v1")
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "other-home"))
    run = spade("import", f"harbor:{tasks}", "--trust", "--json")
    outcomes = {o["origin"]: o for o in json.loads(run.stdout)}
    assert outcomes["SwapSort-v1"]["outcome"] == "failed", outcomes["SwapSort-v1"]
    reason = outcomes["SwapSort-v1"]["reason"]
    assert reason and "Traceback" not in reason, reason
    imported = sorted(o for o, v in outcomes.items() if v["outcome"] == "imported")
    assert imported == sorted(i for i in IDS if i != "SwapSort-v1"), outcomes
    with open_store() as store:
        assert sorted(m.id for m in store.find()) == imported

