"""Checks what SPADE writes with Harbor's own code: run by ``test_harbor.py`` under the
interpreter ``SPADE_HARBOR_PYTHON`` names (the ``harbor`` package needs Python >= 3.12,
SPADE's floor is 3.11), never imported by the suite itself.

``python harbor_check.py tasks DIR``: every task folder under ``DIR`` through Harbor's
loader (``Task``), its ``Task.is_valid_dir`` and its linter (``lint_task`` with the rules
``harbor lint`` applies by default). ``python harbor_check.py atif FILE...``: each file
through Harbor's ATIF model (``Trajectory``) and its ``TrajectoryValidator``. Prints one
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


def main() -> None:
    what, *args = sys.argv[1:]
    result = check_tasks(Path(args[0])) if what == "tasks" else check_atif([Path(a) for a in args])
    print(json.dumps({"harbor": version("harbor"), "result": result}, default=str))


if __name__ == "__main__":
    main()
