"""Harbor tasks and ATIF trajectories (docs/harbor.md): ``spade export --to-harbor``
writes tasks that ``spade import harbor:`` reads back field for field, the task's own
commands play and verify an episode in the real sandbox, anything damaged or foreign is
a failed item naming the task, and run transcripts export as ATIF.

Harbor's own loader, linter and ATIF model check the output when ``SPADE_HARBOR_PYTHON``
names an interpreter with the ``harbor`` package installed (Harbor needs Python >= 3.12),
and Harbor's own trial runner plays and verifies exported tasks with its oracle and nop
agents, the task's container played in bubblewrap (``harbor_bwrap_env.py``); see
``harbor_check.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from spade_core.app.harbor import (
    EPISODE_FILE,
    REWARD_FILE,
    TASK_HOME,
    HarborError,
    toml_document,
    trajectory_from_transcript,
)
from spade_core.app.harbor_episode import ROOT_COMMAND, STATE_FILE, main
from spade_core.metadata import EnvMetadata, StatsSnapshot, ValidationReport

from .cli_support import open_store, spade
from .conftest import REFERENCE_ENVS

IDS = ["GuessNumber-v1", "LightSwitches-v1", "SwapSort-v1", "SwapSortHard-v1", "TowerOfHanoi-v1"]
HARBOR_PYTHON = os.environ.get("SPADE_HARBOR_PYTHON")
needs_harbor = pytest.mark.skipif(
    not HARBOR_PYTHON and os.environ.get("CI") != "true",  # CI makes it (.ci/run): never skipped there
    reason="SPADE_HARBOR_PYTHON does not name a Python (>= 3.12) with the harbor package installed "
    '(eval "$(bash scripts/setup-harbor.sh)" makes one and sets it; CI runs it)',
)
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap's bwrap is not on PATH (Harbor's trials run the task's container as a bwrap stand-in)",
)


def _import(*args: str) -> tuple[int, list[dict]]:
    run = spade("import", *args, "--json")
    return run.exit_code, json.loads(run.stdout)


def _seed_store() -> None:
    """The reference environments with the history an export must carry."""
    code, _ = _import(str(REFERENCE_ENVS), "--domain", "games", "--status", "admitted", "--trust")
    assert code == 0
    with open_store() as store:
        store.record_stats("SwapSort-v1", StatsSnapshot(policy_snapshot="step-4", samples=32, win_rate=0.5, regret=0.2))
        store.set_validation("SwapSort-v1", ValidationReport(passed=True, feasibility_proven=True))
        store.set_hint("GuessNumber-v1", "Halve the interval: guess the middle.")
        child = EnvMetadata(name="SwapSortHard", domain="games", skill="sorting", parent_ids=["SwapSort-v1"], tags=["hard"])
        store.add((REFERENCE_ENVS / "swap_sort.py").read_text().replace("size=5", "size=7"), child)


def _stored() -> dict[str, tuple[str, EnvMetadata]]:
    with open_store() as store:
        return {m.id: (store.get_source(m.id), m) for m in store.find()}


@pytest.fixture
def tasks(tmp_path: Path, spade_home: Path) -> Path:
    _seed_store()
    out = tmp_path / "tasks"
    run = spade("export", "--to-harbor", str(out))
    assert run.exit_code == 0, run.output
    assert "exported 5 environments as Harbor tasks" in run.stdout
    return out


# --- what a task holds --------------------------------------------------------------------


def test_each_environment_becomes_a_task_folder_with_spade_metadata_in_task_toml(tasks: Path) -> None:
    assert sorted(p.name for p in tasks.iterdir()) == IDS
    stored = _stored()
    for env_id in IDS:
        folder = tasks / env_id
        source, meta = stored[env_id]
        config = tomllib.loads((folder / "task.toml").read_text())
        assert config["task"]["name"] == f"spade/{env_id}"
        assert config["metadata"]["spade"] == {
            "kind": "gym",
            "layout": 2,
            "id": env_id,
            "name": meta.name,
            "version": meta.version,
            "domain": "games",
            "skill": meta.skill,
            "code_hash": meta.code_hash,
            "action_format": "boxed",
            "max_turns": meta.max_turns,
            "reward_range": list(meta.reward_range),
            "seed": 0,
        }
        assert config["verifier"]["environment_mode"] == "separate", "the agent cannot touch the verifier"
        assert config["agent"]["user"] == "agent"
        assert (folder / "environment/spade/env.py").read_text() == source
        assert EnvMetadata.model_validate_json((folder / "tests/spade/metadata.json").read_text()) == meta
        runs_with = EnvMetadata.model_validate_json((folder / "environment/spade/metadata.json").read_text())
        assert (runs_with.id, runs_with.class_name, runs_with.max_turns) == (meta.id, meta.class_name, meta.max_turns)
        assert runs_with.hint is None and runs_with.validation is None and runs_with.stats == []
        assert (meta.description.strip() or "A SPADE text environment.") in (folder / "instruction.md").read_text()
        for script in ("tests/test.sh", "solution/solve.sh", "environment/spade-episode", "environment/spade-episode-root"):
            assert os.access(folder / script, os.X_OK), script
        assert f"--reward {REWARD_FILE}" in (folder / "tests/test.sh").read_text()
        dockerfile = (folder / "environment/Dockerfile").read_text()
        assert f"COPY spade/ {TASK_HOME}/" in dockerfile and f"chmod -R go-rwx {TASK_HOME}" in dockerfile
        assert (folder / "environment/sudoers").read_text() == f"agent ALL=(root) NOPASSWD: {ROOT_COMMAND}\n"
        assert (folder / "tests/spade/episode.key").read_text() == (folder / "environment/spade/episode.key").read_text()
        requirements = (folder / "environment/requirements.txt").read_text().split()
        assert all("==" in r for r in requirements) and "spade-games==0.1.0" in requirements
    assert "Halve the interval" in (tasks / "GuessNumber-v1/solution/hint.md").read_text(), "the hint is the note"
    assert not (tasks / "SwapSort-v1/solution/hint.md").exists(), "no hint, no note"


def test_task_toml_holds_what_toml_forbids_and_leaves_out_none() -> None:
    tricky = 'quote " backslash \\ tab \t newline \n del \x7f bell \x07 é 🎲'
    table = {"a": tricky, "n": None, "t": {"x": [0.1, -2.5, 1e-05], "gone": None}}
    assert tomllib.loads(toml_document(table)) == {"a": tricky, "t": {"x": [0.1, -2.5, 1e-05]}}
    with pytest.raises(HarborError, match="cannot write task.toml"):
        toml_document({"bad": object()})


def test_export_refuses_a_non_empty_folder_and_mixed_targets(tasks: Path, tmp_path: Path) -> None:
    run = spade("export", "--to-harbor", str(tasks))
    assert run.exit_code == 2 and "is not empty; pass --force" in run.stderr
    run = spade("export", str(tmp_path / "x.jsonl"), "--to-harbor", str(tmp_path / "other"))
    assert run.exit_code == 2 and "export writes one target" in run.stderr
    assert spade("export", "--to-harbor", str(tasks), "--force").exit_code == 0


# --- the round trip -----------------------------------------------------------------------


def test_export_then_import_harbor_reproduces_every_field(
    tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _stored()
    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(fresh))
    code, report = _import(f"harbor:{tasks}", "--trust")
    assert code == 0, report
    assert [(r["origin"], r["outcome"]) for r in report] == [(i, "imported") for i in IDS]
    assert _stored() == before, "sources and complete metadata come back equal"
    code, again = _import(f"harbor:{tasks}", "--trust")
    assert [r["outcome"] for r in again] == ["unchanged"] * 5


def test_imported_tasks_follow_the_status_rule(tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_HOME", str(tmp_path))
    code, report = _import(f"harbor:{tasks / 'GuessNumber-v1'}")
    assert code == 0 and report[0]["origin"] == "GuessNumber-v1"
    assert any("read as a candidate" in n for n in report[0]["notes"]), "a task's recorded admitted is not trusted"
    with open_store() as store:
        assert store.get("GuessNumber-v1").status.value == "candidate"


# --- foreign and damaged tasks --------------------------------------------------------------


def _foreign_task(folder: Path) -> None:
    (folder / "tests").mkdir(parents=True)
    (folder / "environment").mkdir()
    (folder / "task.toml").write_text('[metadata]\ndifficulty = "easy"\n\n[verifier]\ntimeout_sec = 60.0\n')
    (folder / "instruction.md").write_text("Write hello.txt.\n")
    (folder / "tests/test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")


def test_a_task_of_another_kind_is_reported_by_name(tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _foreign_task(tasks / "hello-world")
    monkeypatch.setenv("SPADE_HOME", str(tmp_path))
    code, report = _import(f"harbor:{tasks}")
    assert code == 1
    by_origin = {r["origin"]: r for r in report}
    assert by_origin["hello-world"]["outcome"] == "failed"
    assert by_origin["hello-world"]["reason"].startswith("not a SPADE gym task (task.toml has no [metadata.spade] table")
    assert sum(r["outcome"] == "imported" for r in report) == 5, "the other tasks still import"


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda t: (t / "task.toml").write_text("[metadata\n"), "task.toml is not valid TOML: "),
        (lambda t: (t / "environment/spade/env.py").unlink(), "environment/spade/env.py is missing"),
        (lambda t: (t / "tests/spade/metadata.json").write_text("{"), "metadata.json is not valid JSON"),
        (
            lambda t: (t / "environment/spade/env.py").write_text((t / "environment/spade/env.py").read_text() + "#\n"),
            "code_hash in the metadata does not match the code",
        ),
        (
            lambda t: (t / "task.toml").write_text((t / "task.toml").read_text().replace("max_turns = 25", "max_turns = 3")),
            "task.toml's [metadata.spade] max_turns (3) differs from tests/spade/metadata.json (25)",
        ),
        (
            lambda t: (t / "task.toml").write_text((t / "task.toml").read_text().replace('kind = "gym"', 'kind = "swe"')),
            "not a SPADE gym task ([metadata.spade] kind is 'swe'",
        ),
        (lambda t: (t / "task.toml").write_bytes(b"\xff\xfe"), "cannot read task.toml: task.toml is not UTF-8 text"),
    ],
    ids=["bad-toml", "no-code", "bad-json", "edited-code", "edited-summary", "other-kind", "not-utf8"],
)
def test_a_damaged_task_fails_with_its_reason(
    damage, reason: str, tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    damage(tasks / "SwapSort-v1")
    monkeypatch.setenv("SPADE_HOME", str(tmp_path))
    code, report = _import(f"harbor:{tasks / 'SwapSort-v1'}")
    assert code == 1
    assert report[0]["origin"] == "SwapSort-v1" and report[0]["outcome"] == "failed"
    assert reason in report[0]["reason"]


def test_a_link_out_of_the_task_folder_is_not_followed(tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("class StolenEnv:\n    pass\n")
    code_file = tasks / "SwapSort-v1/environment/spade/env.py"
    code_file.unlink()
    code_file.symlink_to(secret)
    monkeypatch.setenv("SPADE_HOME", str(tmp_path))
    code, report = _import(f"harbor:{tasks / 'SwapSort-v1'}")
    assert code == 1 and "outside the dataset folder" in report[0]["reason"]


def test_a_folder_without_tasks_is_one_clear_error(tmp_path: Path, spade_home: Path) -> None:
    (tmp_path / "empty").mkdir()
    run = spade("import", f"harbor:{tmp_path / 'empty'}")
    assert run.exit_code == 2 and "no Harbor task here" in run.stderr
    run = spade("import", f"harbor:{tmp_path / 'missing'}")
    assert run.exit_code == 2 and "no such folder" in run.stderr
    run = spade("import", "harbor:")
    assert run.exit_code == 2 and "harbor: needs a folder" in run.stderr


# --- playing and verifying in the sandbox ---------------------------------------------------


def _episode(tasks: Path, env_id: str, where: Path, *args: str) -> int:
    """``spade-episode ARGS`` as its root command runs it: the episode's state in
    ``where/state``, its published record in ``where/artifacts``."""
    task = str(tasks / env_id / "environment/spade")
    return main(["episode", "--task", task, "--state", str(where / "state/episode.json"),
                 "--episode", str(where / "artifacts/spade-episode.json"), *args])


def _verify(tasks: Path, env_id: str, record: Path, out: Path) -> float:
    task = str(tasks / env_id / "environment/spade")
    key = str(tasks / env_id / "tests/spade/episode.key")
    args = ["--episode", str(record), "--reward", str(out / "reward.txt"), "--trajectory", str(out / "trajectory.json")]
    assert main(["verify", "--task", task, "--key", key, *args]) == 0
    return float((out / "reward.txt").read_text())


def _solve(tasks: Path, env_id: str, where: Path) -> None:
    """Play the task's ``solution/solve.sh`` (its ``spade-episode`` lines) as the oracle does."""
    for line in (tasks / env_id / "solution/solve.sh").read_text().splitlines():
        if line.startswith("spade-episode "):
            assert _episode(tasks, env_id, where, *shlex.split(line)[1:]) == 0, line


def test_an_agent_plays_through_the_command_and_the_verifier_replays(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "artifacts/spade-episode.json"
    assert _episode(tasks, "GuessNumber-v1", tmp_path, "step", "32") == 2, "no step before start"
    assert "no episode yet" in capsys.readouterr().err
    assert _episode(tasks, "GuessNumber-v1", tmp_path, "start") == 0
    assert "I am thinking of an integer between 1 and 64" in capsys.readouterr().out
    assert _episode(tasks, "GuessNumber-v1", tmp_path, "step", ":solution") == 0, "an action, never a play command"
    assert "Please answer with" in capsys.readouterr().out
    assert _episode(tasks, "GuessNumber-v1", tmp_path, "start") == 2, "one episode per task"
    assert "cannot be restarted" in capsys.readouterr().err
    solve = (tasks / "GuessNumber-v1/solution/solve.sh").read_text()
    for line in solve.splitlines()[4:]:  # the oracle's guesses, after its own start
        assert _episode(tasks, "GuessNumber-v1", tmp_path, *shlex.split(line)[1:]) == 0
    assert "Correct" in capsys.readouterr().out
    played = json.loads(record.read_text())
    assert played["turns"][0]["action"] == "\\boxed{:solution}" and played["turns"][-1]["terminated"]
    assert _verify(tasks, "GuessNumber-v1", record, tmp_path / "verifier") == 1.0
    assert played == json.loads((tmp_path / "state/episode.json").read_text()), "published as root keeps it"


def test_the_agent_side_offers_no_solve_and_holds_no_hint_or_history(tasks: Path, tmp_path: Path) -> None:
    """``solve`` scored 1 for any agent, and the agent's image held the hint and the whole
    metadata document (validation findings with their winning actions, stats, lineage)."""
    with pytest.raises(SystemExit):  # argparse: not one of start, step, show
        _episode(tasks, "GuessNumber-v1", tmp_path, "solve")
    assert not (tmp_path / "artifacts/spade-episode.json").exists()
    for env_id in IDS:
        agent_side = tasks / env_id / "environment"
        text = "".join(p.read_text() for p in agent_side.rglob("*") if p.is_file())
        assert "Halve the interval" not in text and '"validation"' not in text and '"stats"' not in text, env_id
        assert "solve" not in (agent_side / "spade-episode").read_text()
    assert "Halve the interval" in (tasks / "GuessNumber-v1/solution/hint.md").read_text(), "the oracle's note"


def test_an_edited_or_replaced_record_scores_zero_and_a_lost_episode_cannot_be_played_again(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent loses on purpose (eight wrong guesses tell it the number), then plays again:
    with the record it sees moved away, and with a record of the winning guess written in
    its place. The episode is root's: both score the first episode, 0."""
    record = tmp_path / "artifacts/spade-episode.json"
    assert _episode(tasks, "GuessNumber-v1", tmp_path, "start") == 0
    for _ in range(8):
        assert _episode(tasks, "GuessNumber-v1", tmp_path, "step", "0") == 0
    secret = int(re.search(r"it was (\d+)", capsys.readouterr().out).group(1))  # type: ignore[union-attr]
    assert _verify(tasks, "GuessNumber-v1", record, tmp_path / "verifier") == 0.0
    lost = json.loads(record.read_text())
    record.rename(tmp_path / "artifacts/lost.json")
    assert _episode(tasks, "GuessNumber-v1", tmp_path, "start") == 2, "no second episode"
    assert "cannot be restarted" in capsys.readouterr().err
    won = {**lost, "turns": [{"action": f"\\boxed{{{secret}}}", "observation": f"Correct, it was {secret}!",
                             "reward": 1.0, "terminated": True, "truncated": False}]}
    record.write_text(json.dumps(won))  # its signature kept: it no longer holds
    assert _verify(tasks, "GuessNumber-v1", record, tmp_path / "verifier") == 0.0
    # The verifier trusts the actions only: edited rewards and observations of a signed record change nothing.
    forged = {**lost, "turns": [{**t, "reward": 1.0, "observation": "forged"} for t in lost["turns"]]}
    record.write_text(json.dumps(forged))
    assert _verify(tasks, "GuessNumber-v1", record, tmp_path / "verifier") == 0.0
    record.unlink()
    record.symlink_to(tasks / "GuessNumber-v1/tests/spade/episode.key")  # a record that is a link: not read
    assert _verify(tasks, "GuessNumber-v1", record, tmp_path / "verifier") == 0.0


def test_no_episode_scores_zero(tasks: Path, tmp_path: Path) -> None:
    assert _verify(tasks, "SwapSort-v1", tmp_path / "none.json", tmp_path / "verifier") == 0.0


def test_the_task_scripts_name_the_container_paths(tasks: Path) -> None:
    assert EPISODE_FILE.startswith("/logs/artifacts/"), "Harbor hands its artifacts folder to the verifier"
    root = (tasks / "SwapSort-v1/environment/spade-episode-root").read_text()
    assert EPISODE_FILE in root and STATE_FILE in root and "cd / && exec env -i" in root
    assert f"sudo -n {ROOT_COMMAND}" in (tasks / "SwapSort-v1/environment/spade-episode").read_text()


# --- ATIF -----------------------------------------------------------------------------------


def _run_folder(tmp_path: Path) -> Path:
    """A run folder with transcripts as the run archive writes them."""
    run = tmp_path / "run"
    run.mkdir()
    rows = [
        {
            "iteration": 3, "env_id": "GuessNumber-v1", "hinted": False, "return": 1.0, "turns": 2,
            "terminated": True, "truncated": False, "hung": False, "error": None, "rewards": [0.0, 1.0],
            "messages": [
                {"role": "system", "content": "You act in a text environment."},
                {"role": "user", "content": "Guess a number in [1, 64]."},
                {"role": "assistant", "content": "\\boxed{32}"},
                {"role": "user", "content": "32 is wrong; go higher."},
                {"role": "assistant", "content": "\\boxed{48}"},
            ],
        },
        {
            "iteration": 3, "env_id": "FileFinder-v1", "hinted": True, "return": 0.0, "turns": 3,
            "terminated": False, "truncated": True, "hung": False, "error": None, "rewards": [0.0, 0.0, 0.0],
            "messages": [
                {"role": "user", "content": "Find the report. Tools: ls(path), cd(path)."},
                {"role": "assistant", "content": 'Look first. <tool_call>{"name": "ls", "arguments": {"path": "/"}}'
                                                 '</tool_call>'},
                {"role": "user", "content": "home etc"},
                {"role": "assistant", "content": '<tool_call>{"name": "cd", "arguments": {"path": "/home"}}</tool_call>'
                                                 '<tool_call>{"name": "ls", "arguments": "{}"}</tool_call>'},
                {"role": "user", "content": "ok\nreport.txt"},
                {"role": "assistant", "content": '<tool_call>{"name": "cat", "arguments": [1]}</tool_call>'},
            ],
        },
        {"archive_full": True},
    ]
    (run / "transcripts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_a_run_transcript_becomes_an_atif_trajectory(tmp_path: Path, spade_home: Path) -> None:
    out = tmp_path / "atif"
    run = spade("export", "--to-atif", str(out), "--run", str(_run_folder(tmp_path)))
    assert run.exit_code == 0, run.output
    assert "exported 2 ATIF trajectories" in run.stdout
    file, tools = sorted(out.iterdir())
    assert file.name == "00000-GuessNumber-v1.json"
    t = json.loads(file.read_text())
    assert not any("tool_calls" in s for s in t["steps"]), "a boxed action is no tool call"
    assert t["schema_version"] == "ATIF-v1.6" and t["agent"]["name"] == "spade"
    assert [(s["step_id"], s["source"]) for s in t["steps"]] == [(1, "system"), (2, "user"), (3, "agent"), (4, "agent")]
    assert t["steps"][2]["observation"]["results"][0]["content"] == "32 is wrong; go higher."
    assert "observation" not in t["steps"][3], "the archive keeps no reply after the last action"
    assert [s["extra"]["reward"] for s in t["steps"][2:]] == [0.0, 1.0]
    assert t["final_metrics"]["extra"]["success"] is True
    assert t["extra"] == {"env_id": "GuessNumber-v1", "iteration": 3, "hinted": False}
    one, two, bad = json.loads(tools.read_text())["steps"][1:]
    assert one["tool_calls"] == [{"tool_call_id": "call-2-1", "function_name": "ls", "arguments": {"path": "/"}}]
    assert one["observation"]["results"] == [{"content": "home etc", "source_call_id": "call-2-1"}]
    assert [c["function_name"] for c in two["tool_calls"]] == ["cd", "ls"] and two["tool_calls"][1]["arguments"] == {}
    assert "source_call_id" not in two["observation"]["results"][0], "one reply to two calls names neither"
    assert "tool_calls" not in bad and bad["message"].startswith("<tool_call>"), "a malformed call stays text"


def test_atif_export_needs_its_run(tmp_path: Path, spade_home: Path) -> None:
    run = spade("export", "--to-atif", str(tmp_path / "atif"))
    assert run.exit_code == 2 and "--to-atif DIR and --run RUN go together" in run.stderr
    run = spade("export", "--to-atif", str(tmp_path / "atif"), "--run", str(tmp_path))
    assert run.exit_code == 2 and "holds no transcripts.jsonl" in run.stderr


def test_a_transcript_without_actions_keeps_its_prompt() -> None:
    t = trajectory_from_transcript({"messages": [{"role": "user", "content": "hi"}], "rewards": []}, "s")
    assert [s["source"] for s in t["steps"]] == ["user"]


# --- Harbor's own code ----------------------------------------------------------------------


def _harbor(*args: str) -> dict:
    assert HARBOR_PYTHON, ("SPADE_HARBOR_PYTHON is not set: CI makes it with scripts/setup-harbor.sh (.ci/run), "
                           "which needs a Python >= 3.12 (HARBOR_BASE_PYTHON, PATH or pyenv)")
    script = Path(__file__).with_name("harbor_check.py")
    done = subprocess.run(
        [str(HARBOR_PYTHON), str(script), *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_harbor
def test_harbor_loads_and_lints_the_exported_tasks(tasks: Path) -> None:
    checked = _harbor("tasks", str(tasks))
    stored = _stored()
    assert sorted(checked["result"]) == IDS
    for env_id, seen in checked["result"].items():
        assert "error" not in seen, seen
        assert seen["valid_dir"] is True
        assert seen["lint"] == [], "clean under harbor lint's default rules"
        assert seen["name"] == f"spade/{env_id}"
        assert seen["verifier_mode"] == "separate" and seen["agent_user"] == "agent"
        assert seen["test_script"] == "tests/test.sh" and seen["solve_script"] == "solution/solve.sh"
        spade_table = seen["metadata"]["spade"]
        meta = stored[env_id][1]
        assert (spade_table["id"], spade_table["code_hash"], spade_table["max_turns"]) == (
            meta.id, meta.code_hash, meta.max_turns
        )
        assert seen["instruction"].startswith(f"# {meta.name} (version {meta.version})")


@needs_harbor
def test_harbor_validates_the_atif_of_a_run_and_of_a_verified_episode(tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "atif"
    assert spade("export", "--to-atif", str(out), "--run", str(_run_folder(tmp_path))).exit_code == 0
    _solve(tasks, "TowerOfHanoi-v1", tmp_path)
    _verify(tasks, "TowerOfHanoi-v1", tmp_path / "artifacts/spade-episode.json", tmp_path / "verifier")
    files = [str(p) for p in sorted(out.iterdir())] + [str(tmp_path / "verifier/trajectory.json")]
    checked = _harbor("atif", *files)
    for path, seen in checked["result"].items():
        assert seen["valid"] is True and seen["errors"] == [], path
        assert seen["schema_version"] == "ATIF-v1.6"
    verified = checked["result"][files[-1]]
    assert verified["sources"][0] == "user" and set(verified["sources"][1:]) == {"agent"}
    assert verified["rewards"][-1] == 1.0, "the oracle solves the tower"
    shutil.rmtree(out)


@needs_harbor
@needs_bwrap
def test_harbors_trial_runner_plays_and_verifies_the_tasks(tasks: Path, tmp_path: Path) -> None:
    """Harbor's ``Trial`` end to end on the exported tasks, their scripts unchanged: the oracle
    (``solution/solve.sh``) wins two, nop scores 0 on a third; the episode goes through
    Harbor's artifact collection to the separate verifier, whose replay is valid ATIF. The
    container is the bwrap stand-in, SPADE from this interpreter (the image's pip install)."""
    runs = ["oracle:GuessNumber-v1", "oracle:TowerOfHanoi-v1", "nop:SwapSort-v1", "hostile:GuessNumber-v1"]
    checked = _harbor("trials", str(tasks), sys.executable, str(tmp_path / "trials"), *runs)["result"]

    probe = checked.pop("probe")
    assert probe["agent_id"]["out"] == ["agent", "1000"] and probe["root_id"]["out"] == ["root", "0"]
    assert [Path(p).name for p in probe["commands"]["out"]] == ["spade-episode", "python"]
    assert probe["spade"]["out"] == ["spade_core"], probe["spade"]["err"]
    assert probe["task_home"]["out"] == ["env.py", "episode.key", "metadata.json", "requirements.txt", "runtime.json"]
    for root_own in ("task_home_of_agent", "state_of_agent"):
        assert probe[root_own]["rc"] != 0 and probe[root_own]["out"] == [], (root_own, probe[root_own])
    assert probe["sudo_other"]["rc"] != 0 and "password is required" in probe["sudo_other"]["err"]
    assert probe["task_home_read_only"]["rc"] != 0 and "Read-only" in probe["task_home_read_only"]["err"]
    assert probe["interfaces"]["out"] == ["lo"], "no network: loopback only"
    assert probe["logs_writable"]["rc"] == 0, probe["logs_writable"]["err"]

    for run, seen in checked.items():
        assert seen["exception"] is None, (run, seen["exception"])
        assert seen["verifier_mode"] == "separate"
        assert "network no-network" in (Path(seen["trial_dir"]) / "trial.log").read_text(), "both environments"
    for run, won in (("oracle:GuessNumber-v1", "Correct"), ("oracle:TowerOfHanoi-v1", "Solved!")):
        seen = checked[run]
        assert seen["rewards"] == {"reward": 1.0}, seen["test_stdout"]
        assert won in seen["agent_log"] and seen["test_stdout"] == "reward 1\n"
        assert "artifacts/logs/artifacts/spade-episode.json" in seen["files"], "Harbor collected the transcript"
        episode = json.loads((Path(seen["trial_dir"]) / "artifacts/logs/artifacts/spade-episode.json").read_text())
        assert episode["turns"][-1]["terminated"] and episode["turns"][-1]["reward"] == 1.0
        trajectory = seen["trajectory"]
        assert trajectory["valid"] is True and trajectory["errors"] == [], trajectory
        assert trajectory["schema_version"] == "ATIF-v1.6" and trajectory["rewards"][-1] == 1.0
        assert len(trajectory["rewards"]) == len(episode["turns"]), "the verifier replayed every action"
    idle = checked["nop:SwapSort-v1"]
    assert idle["rewards"] == {"reward": 0.0} and idle["test_stdout"] == "no episode was played: reward 0\nreward 0\n"
    assert not any(f.startswith("artifacts/logs/") for f in idle["files"]) and idle["trajectory"] is None

    # An agent trying every way around its episode (harbor_hostile_agent.py): none works.
    hostile = checked["hostile:GuessNumber-v1"]
    tried = hostile["hostile"]
    for attempt in ("read_code", "read_seed", "solve", "sudo_other", "start_again", "start_after_moving"):
        assert tried[attempt]["rc"] != 0, (attempt, tried[attempt])
    assert tried["find_hint"]["out"] == "" and tried["find_code"]["out"] == "", tried
    assert tried["secret"] is not None and "forge" in tried, "it lost, learnt the number and wrote a winning record"
    assert hostile["rewards"] == {"reward": 0.0}, hostile["test_stdout"]
