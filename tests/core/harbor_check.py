"""Checks what SPADE writes with Harbor's own code: run by ``test_harbor.py`` under the
interpreter ``SPADE_HARBOR_PYTHON`` names (the ``harbor`` package needs Python >= 3.12,
SPADE's floor is 3.11), never imported by the suite itself.

``python harbor_check.py tasks DIR``: every task folder under ``DIR`` through Harbor's
loader (``Task``), its ``Task.is_valid_dir`` and its linter (``lint_task`` with the rules
``harbor lint`` applies by default). ``python harbor_check.py atif FILE...``: each file
through Harbor's ATIF model (``Trajectory``) and its ``TrajectoryValidator``.
``python harbor_check.py trials DIR SPADE_PYTHON OUT AGENT:TASK...``: one trial of each
pair through Harbor's own trial runner (``Trial.create`` / ``Trial.run``: the agent
``oracle`` or ``nop``, or ``hostile`` (``harbor_hostile_agent.py``), on the task ``DIR/TASK``, the verifier in a separate environment),
the environment being ``harbor_bwrap_env.BwrapEnvironment`` (the task's container played in
bubblewrap, SPADE from ``SPADE_PYTHON``), the trials' folders under ``OUT``. Prints one
JSON object: what Harbor read, and every problem it reported, as text.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any


def check_tasks(folder: Path) -> dict[str, Any]:
    from harbor.lint import lint_task
    from harbor.lint.models import DEFAULT_RULES
    from harbor.models.task.task import Task
    from harbor.models.task.verifier_mode import resolve_task_verifier_mode

    out: dict[str, Any] = {}
    for task_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        try:
            task = Task(task_dir)
        except Exception as exc:  # reported, so that the test shows Harbor's reason
            out[task_dir.name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out[task_dir.name] = {
            "valid_dir": Task.is_valid_dir(task_dir),
            "name": task.name,
            "instruction": task.instruction,
            "metadata": task.config.metadata,
            "verifier_mode": resolve_task_verifier_mode(task.config).value,
            "agent_user": task.config.agent.user,
            "network_mode": task.config.environment.network_mode.value,
            "test_script": str(task.paths.discovered_test_path.relative_to(task.paths.task_dir)),
            "solve_script": str(task.paths.discovered_solve_path.relative_to(task.paths.task_dir)),
            "lint": [f"{f.rule}: {f.message}" for f in lint_task(task_dir, selected_rules=set(DEFAULT_RULES))],
        }
    return out


def check_atif(files: list[Path]) -> dict[str, Any]:
    from harbor.models.trajectories import Trajectory
    from harbor.utils.trajectory_validator import TrajectoryValidator

    out: dict[str, Any] = {}
    for path in files:
        validator = TrajectoryValidator()
        ok = validator.validate(path)
        entry: dict[str, Any] = {"valid": ok, "errors": validator.get_errors()}
        if ok:
            trajectory = Trajectory.model_validate_json(path.read_text())
            entry["schema_version"] = trajectory.schema_version
            entry["sources"] = [s.source for s in trajectory.steps]
            entry["rewards"] = [(s.extra or {}).get("reward") for s in trajectory.steps if s.source == "agent"]
        out[str(path)] = entry
    return out


ENVIRONMENT = "harbor_bwrap_env:BwrapEnvironment"
#: Agents of ours, by the name a trial gives them (Harbor's own are named as Harbor names them).
AGENTS = {"hostile": "harbor_hostile_agent:HostileAgent"}


async def _trial(task_dir: Path, agent: str, spade_python: str, out: Path) -> dict[str, Any]:
    from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TaskConfig, TrialConfig
    from harbor.trial.trial import Trial

    chosen = AgentConfig(import_path=AGENTS[agent]) if agent in AGENTS else AgentConfig(name=agent)
    config = TrialConfig(
        task=TaskConfig(path=task_dir),
        trial_name=f"{agent}-{task_dir.name}",
        trials_dir=out,
        agent=chosen,
        environment=EnvironmentConfig(import_path=ENVIRONMENT, kwargs={"spade_python": spade_python}),
    )
    trial = await Trial.create(config)
    result = await trial.run()
    folder = trial.paths.trial_dir
    error = result.exception_info
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    return {
        "trial_dir": str(folder),
        "verifier_mode": result.verifier_environment_mode.value if result.verifier_environment_mode else None,
        "rewards": result.verifier_result.rewards if result.verifier_result else None,
        "exception": f"{error.exception_type}: {error.exception_message}" if error else None,
        "files": files,
        "test_stdout": _text(trial.paths.test_stdout_path),
        "agent_log": _text(trial.paths.agent_dir / "oracle.txt"),
        "hostile": json.loads(_text(trial.paths.agent_dir / "hostile.json") or "null"),
    }


def _text(path: Path) -> str | None:
    return path.read_text(errors="replace") if path.is_file() else None


#: What the probe runs in the stand-in, as each container user: name -> (user, command).
PROBES = {
    "agent_id": ("agent", "id -un; id -u"),
    "root_id": ("root", "id -un; id -u"),
    "commands": ("agent", "command -v spade-episode python"),
    "spade": ("agent", "python -c 'import spade_core, spade_sandbox; print(spade_core.__name__)'"),
    "task_home": ("root", "ls /opt/spade-task"),
    "task_home_of_agent": ("agent", "ls /opt/spade-task"),
    "state_of_agent": ("agent", "ls /var/lib/spade-episode"),
    "sudo_other": ("agent", "sudo -n /bin/cat /opt/spade-task/env.py"),
    "task_home_read_only": ("root", "touch /opt/spade-task/x"),
    "interfaces": ("agent", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"),
    "logs_writable": ("agent", "touch /logs/agent/a /logs/verifier/v /logs/artifacts/x && ls /logs"),
}


async def _probe(task_dir: Path, spade_python: str, out: Path) -> dict[str, Any]:
    """The stand-in itself, started as Harbor starts it for the no-network task."""
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.task.config import NetworkMode, NetworkPolicy
    from harbor.models.task.task import Task
    from harbor.models.trial.paths import TrialPaths

    paths = TrialPaths(trial_dir=out / "probe")
    paths.mkdir()
    task = Task(task_dir)
    env = EnvironmentFactory.create_environment_from_import_path(
        ENVIRONMENT,
        environment_dir=task.paths.environment_dir,
        environment_name=task.short_name,
        session_id="probe",
        trial_paths=paths,
        task_env_config=task.config.environment,
        network_policy=NetworkPolicy(network_mode=NetworkMode(task.config.environment.network_mode)),
        spade_python=spade_python,
    )
    await env.start(force_build=False)
    try:
        seen = {}
        for name, (user, command) in PROBES.items():
            done = await env.exec(command, user=user, timeout_sec=60)
            seen[name] = {"rc": done.return_code, "out": (done.stdout or "").split(), "err": done.stderr}
        return seen
    finally:
        await env.stop(delete=True)


def check_trials(task_root: Path, spade_python: str, out: Path, runs: list[str]) -> dict[str, Any]:
    import asyncio
    import contextlib

    sys.path.insert(0, str(Path(__file__).parent))  # harbor_bwrap_env, by the import path
    pairs = [run.split(":", 1) for run in runs]

    async def all_trials() -> list[dict[str, Any]]:
        return await asyncio.gather(
            _probe(task_root / pairs[0][1], spade_python, out),
            *(_trial(task_root / task, agent, spade_python, out) for agent, task in pairs),
        )

    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the one JSON answer
        probe, *results = asyncio.run(all_trials())
    checked: dict[str, Any] = {"probe": probe}
    for run, seen in zip(runs, results, strict=True):
        trajectory = Path(seen["trial_dir"]) / "verifier/trajectory.json"
        seen["trajectory"] = check_atif([trajectory])[str(trajectory)] if trajectory.is_file() else None
        checked[run] = seen
    return checked


def main() -> None:
    what, *args = sys.argv[1:]
    if what == "tasks":
        result = check_tasks(Path(args[0]))
    elif what == "trials":
        result = check_trials(Path(args[0]), args[1], Path(args[2]), args[3:])
    else:
        result = check_atif([Path(a) for a in args])
    print(json.dumps({"harbor": version("harbor"), "result": result}, default=str))


if __name__ == "__main__":
    main()
