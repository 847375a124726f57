r"""Environments as Harbor tasks, and episodes as ATIF trajectories (docs/harbor.md).

Harbor (the Laude Institute's agent-evaluation framework) runs an agent in a container
built from a *task* folder and scores it with the task's verifier. ``spade export
--to-harbor DIR`` writes one task per store environment (layout 2):

* ``task.toml``: Harbor's configuration; SPADE's own record of the environment (id, name,
  version, domain, skill, code hash, action format, max turns, reward range, the episode
  seed) is the table ``[metadata.spade]``, whose ``kind = "gym"`` marks a task of ours;
  the verifier runs in a separate container, the agent as the non-root user ``agent``;
* ``instruction.md``: what the environment is and how to play it;
* ``environment/``: a Dockerfile installing SPADE (``requirements.txt``, pinned) and the
  environment under :data:`TASK_HOME`, readable by root only (``spade/env.py``, the
  metadata it runs with, ``spade/metadata.json``, without the hint or anything else of the
  environment's history, ``spade/runtime.json``: seed and the domain's allowed modules, and
  the record key); the agent plays through ``spade-episode`` (``start``, ``step ACTION``,
  ``show``), which asks ``sudo`` for the one root command ``spade-episode-root``
  (:mod:`spade_core.app.harbor_episode`: who owns the episode);
* ``tests/``: ``test.sh``, the verifier, which scores the signed record by replaying its
  actions in a fresh sandbox, writes the return (:func:`spade_core.returns.episode_return`)
  to :data:`REWARD_FILE` and the replayed episode as ATIF beside it; ``spade/metadata.json``,
  the full metadata document (what import reads back); ``spade/episode.key``;
* ``solution/``: ``solve.sh``, the oracle's, plays the actions the environment's own
  ``solution()`` gave at the task's seed (run in the sandbox at export) through
  ``spade-episode``; ``hint.md``, the hint, when there is one. Harbor hands ``tests/`` to
  the verifier and ``solution/`` to the oracle agent only: neither is in the agent's image.

``spade import harbor:DIR`` reads such tasks back (:func:`read_harbor_items`, of
:mod:`.harbor_import`, re-exported here: ``DIR`` is a task or a folder of tasks, layout 1
or 2) into the importer's items; a task that is not of our kind, or is damaged, is a failed
item naming the task and the reason.

``spade export --to-atif DIR --run RUN`` writes one ATIF trajectory
(:mod:`spade_core.app.atif`) per transcript of a run (``transcripts.jsonl``) or of a
task's episode file. Every file is written through :func:`~spade_core.app.file_writes.write_inside`
(no link followed); JSON by the standard library, TOML by ``tomli_w``.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..metadata import EnvMetadata, identity
from .atif import ATIF_VERSION, EpisodeTurn, atif_trajectory, trajectory_from_episode, trajectory_from_transcript
from .file_writes import write_inside
from .harbor_episode import (
    EPISODE_FILE,
    KEY_NAME,
    REWARD_FILE,
    ROOT_COMMAND,
    STATE_FILE,
    TASK_HOME,
    TRAJECTORY_FILE,
    VERIFIER_KEY,
    HarborError,
    TaskEnvironment,
    read_episode,
    reference_actions,
)
from .harbor_import import TASK_KIND, harbor_path, is_harbor_ref, read_harbor_items, task_folders

if TYPE_CHECKING:
    from ..plugins import SpadePlugins

#: Version of the task layout written (``[metadata.spade] layout``): 2 since the episode is
#: the verifier's (layout 1 kept the full metadata and a ``solve`` command in the agent's image).
LAYOUT_VERSION = 2
#: The ``task.toml`` schema the tasks are written to (Harbor's ``TaskConfig``).
HARBOR_SCHEMA_VERSION = "1.4"
#: What of the metadata the agent's image holds: what running the environment needs, nothing
#: of its history (no hint, validation findings with their actions, stats or lineage).
RUNTIME_FIELDS = frozenset({"schema_version", "id", "name", "version", "domain", "skill", "description", "max_turns",
                            "reward_range", "action_format", "class_name", "code_hash", "nondeterministic",
                            "fixed_instance", "tags"})
#: How long Harbor gives the agent and the verifier (seconds).
AGENT_TIMEOUT_S = 1800.0
VERIFIER_TIMEOUT_S = 600.0
#: The state folder of the episode in the image, root's own.
STATE_DIR = str(Path(STATE_FILE).parent)


# --- writing TOML --------------------------------------------------------------------


def _without_none(table: Mapping[str, Any]) -> dict[str, Any]:
    """``table`` with its ``None`` values left out (TOML has no null), nested tables too."""
    return {k: _without_none(v) if isinstance(v, Mapping) else v for k, v in table.items() if v is not None}


def toml_document(table: Mapping[str, Any]) -> str:
    """``table`` (nested tables of plain values) as TOML text, written by ``tomli_w`` (the
    writing half of the standard library's ``tomllib``); a value TOML cannot hold is a
    :class:`HarborError`."""
    import tomli_w

    try:
        return tomli_w.dumps(_without_none(table))
    except (TypeError, ValueError) as exc:
        raise HarborError(f"cannot write task.toml: {exc}") from None


# --- export -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskRuntime:
    """What the container needs beside the environment: the pinned distributions of SPADE
    (``requirements``) and of each domain's plugin, and each domain's allowed modules (the
    sandbox's import allow-list), as the exporting machine's installed plugins declare them."""

    requirements: tuple[str, ...]
    domain_requirements: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    allowed_modules: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_plugins(cls, plugins: SpadePlugins) -> TaskRuntime:
        from importlib.metadata import PackageNotFoundError, version

        pins = []
        for dist in ("spade-core", "spade-sandbox"):
            try:
                pins.append(f"{dist}=={version(dist)}")
            except PackageNotFoundError:
                pins.append(f"{dist}=={__version__}")
        domains = plugins.domains()  # also fills each plugin's list of domains
        per_domain: dict[str, tuple[str, ...]] = {}
        for info in plugins.infos:
            if info.distribution and info.version and info.distribution not in ("spade-core", "spade-sandbox"):
                for domain in info.domains:
                    per_domain[domain] = (f"{info.distribution}=={info.version}",)
        allowed = {name: tuple(sorted(d.allowed_modules)) for name, d in domains.items()}
        return cls(tuple(pins), per_domain, allowed)

    def pins_for(self, domain: str) -> list[str]:
        """The ``requirements.txt`` lines of a task of ``domain``."""
        return [*self.requirements, *self.domain_requirements.get(domain, ())]


def harbor_name(meta: EnvMetadata) -> str:
    """The Harbor package name of a task (``org/name``; Harbor refuses ``..``)."""
    return "spade/" + re.sub(r"\.{2,}", ".", meta.id)


def task_summary(meta: EnvMetadata, seed: int) -> dict[str, Any]:
    """The ``[metadata.spade]`` table of a task."""
    return {
        "kind": TASK_KIND,
        "layout": LAYOUT_VERSION,
        **identity(meta),
        "code_hash": meta.code_hash,
        "action_format": meta.action_format.value,
        "max_turns": meta.max_turns,
        "reward_range": [float(meta.reward_range[0]), float(meta.reward_range[1])],
        "seed": seed,
    }


def task_config(meta: EnvMetadata, seed: int) -> str:
    """``task.toml`` of the task of ``meta``."""
    spade = task_summary(meta, seed)
    return toml_document({
        "schema_version": HARBOR_SCHEMA_VERSION,
        "task": {"name": harbor_name(meta), "version": str(meta.version),
                 "description": " ".join(meta.description.split())[:500],
                 "keywords": [meta.domain, meta.skill, *meta.tags]},
        "metadata": {"category": meta.domain, "tags": [meta.skill, *meta.tags], "spade": spade},
        "verifier": {"environment_mode": "separate", "timeout_sec": VERIFIER_TIMEOUT_S},
        "agent": {"user": "agent", "timeout_sec": AGENT_TIMEOUT_S},
        "environment": {"network_mode": "no-network"},
    })


def instruction(meta: EnvMetadata) -> str:
    """``instruction.md``: the environment and how to play it."""
    if meta.action_format.value == "boxed":
        how = (
            "Each action is a command in `\\boxed{...}`; `spade-episode step` boxes a bare action for you "
            "(`spade-episode step 'left'` sends `\\boxed{left}`)."
        )
    else:
        how = (
            "Each action is a reply in the environment's tool-call format: `<tool_call>{...}</tool_call>` "
            "blocks, or a plain answer; pass it whole to `spade-episode step`."
        )
    return (
        f"# {meta.name} (version {meta.version})\n\n"
        f"{meta.description.strip() or 'A SPADE text environment.'}\n\n"
        "## How to play\n\n"
        "You play one episode of a text environment through the command `spade-episode`:\n\n"
        "- `spade-episode start` starts the episode and prints the first observation;\n"
        "- `spade-episode step ACTION` takes one action and prints the environment's reply, the reward "
        "and whether the episode is over;\n"
        "- `spade-episode show` prints the episode so far.\n\n"
        f"{how} The episode ends when the environment says so or after {meta.max_turns} actions. "
        "There is one episode: it cannot be restarted. Your score is the episode's final reward when the "
        f"environment ended it (rewards lie in [{meta.reward_range[0]:g}, {meta.reward_range[1]:g}]; "
        "1 is a full success), and 0 when it was cut off by the turn limit.\n"
    )


def dockerfile() -> str:
    """The task image: SPADE and the environment, readable by root only, played by the agent
    through ``sudo`` and the one root command (:mod:`spade_core.app.harbor_episode`)."""
    return (
        "# SPADE task image: the environment runs in SPADE's sandbox behind `spade-episode`; the agent\n"
        "# reads neither its code nor the episode's state (root's), and plays through sudo.\n"
        "FROM python:3.11-slim\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends sudo && rm -rf /var/lib/apt/lists/*\n"
        f"COPY requirements.txt {TASK_HOME}/requirements.txt\n"
        f"RUN pip install --no-cache-dir -r {TASK_HOME}/requirements.txt\n"
        f"COPY spade/ {TASK_HOME}/\n"
        "COPY spade-episode /usr/local/bin/spade-episode\n"
        f"COPY spade-episode-root {ROOT_COMMAND}\n"
        "COPY sudoers /etc/sudoers.d/spade-episode\n"
        "RUN chmod 0755 /usr/local/bin/spade-episode \\\n"
        f"    && chown root:root {ROOT_COMMAND} && chmod 0700 {ROOT_COMMAND} \\\n"
        "    && chown root:root /etc/sudoers.d/spade-episode && chmod 0440 /etc/sudoers.d/spade-episode \\\n"
        f"    && chown -R root:root {TASK_HOME} && chmod -R go-rwx {TASK_HOME} \\\n"
        f"    && mkdir -p -m 0700 {STATE_DIR} \\\n"
        "    && useradd --create-home agent \\\n"
        "    && mkdir -p /logs/artifacts && chmod 1777 /logs/artifacts\n"
        "WORKDIR /home/agent\n"
    )


def _root_script(command: str) -> str:
    """A script run as root (through sudo, or by Harbor for the verifier): from ``/``, with
    nothing of its caller's environment but ``PATH`` (sudo's own), so that no file or
    variable of the agent's (a ``spade.toml`` in its folder, ``PYTHONPATH``...) reaches it."""
    return (
        "#!/bin/sh\n"
        f'cd / && exec env -i PATH="$PATH" LANG=C.UTF-8 SPADE_HOME={STATE_DIR}/home '
        f"python -I -m spade_core.app.harbor_episode {command}\n"
    )


def _agent_script() -> str:
    return f'#!/bin/sh\n# The episode is root\'s: this asks for the one command the agent may run as root.\nexec sudo -n {ROOT_COMMAND} "$@"\n'


def solve_script(actions: list[str], why_none: str | None) -> str:
    """``solution/solve.sh``: the oracle plays the reference actions through ``spade-episode``,
    as any agent plays."""
    lines = ["#!/bin/sh", "# The environment's own solution() at the task's seed, played as an agent plays.", "set -e",
             "spade-episode start"]
    lines += [f"spade-episode step {shlex.quote(a)}" for a in actions]
    if not actions:
        lines.append(f"echo {shlex.quote(f'no reference solution: {why_none}')}")
    return "\n".join(lines) + "\n"


def agent_metadata(meta: EnvMetadata) -> str:
    """The metadata the agent's image holds (:data:`RUNTIME_FIELDS`), as JSON."""
    return json.dumps(meta.model_dump(mode="json", include=set(RUNTIME_FIELDS)), indent=2) + "\n"


def write_task(
    target: Path, source: str, meta: EnvMetadata, runtime: TaskRuntime, *, seed: int = 0
) -> Path:
    """The task folder of one environment under ``target`` (``target/<id>``); returns it.
    Runs the environment once in the sandbox, for the oracle's reference actions."""
    folder = target / meta.id
    allowed = tuple(runtime.allowed_modules.get(meta.domain, ()))
    actions, why_none = reference_actions(TaskEnvironment(source, meta, seed, allowed))
    key = secrets.token_hex(32) + "\n"
    files: dict[str, str] = {
        "task.toml": task_config(meta, seed),
        "instruction.md": instruction(meta),
        "environment/Dockerfile": dockerfile(),
        "environment/requirements.txt": "\n".join(runtime.pins_for(meta.domain)) + "\n",
        "environment/spade-episode": _agent_script(),
        "environment/spade-episode-root": _root_script(
            f'episode --task {TASK_HOME} --state {STATE_FILE} --episode {EPISODE_FILE} "$@"'),
        "environment/sudoers": f"agent ALL=(root) NOPASSWD: {ROOT_COMMAND}\n",
        "environment/spade/env.py": source,
        "environment/spade/metadata.json": agent_metadata(meta),
        "environment/spade/runtime.json": json.dumps({"seed": seed, "allowed_modules": list(allowed)}, indent=2) + "\n",
        f"environment/spade/{KEY_NAME}": key,
        "tests/test.sh": _root_script(
            f"verify --task {TASK_HOME} --key {VERIFIER_KEY} --episode {EPISODE_FILE} --reward {REWARD_FILE} "
            f"--trajectory {TRAJECTORY_FILE}"),
        "tests/spade/metadata.json": meta.model_dump_json(indent=2) + "\n",
        f"tests/spade/{KEY_NAME}": key,
        "solution/solve.sh": solve_script(actions, why_none),
    }
    if meta.hint:
        files["solution/hint.md"] = f"# Hint\n\n{meta.hint.strip()}\n"
    executable = ("tests/test.sh", "solution/solve.sh", "environment/spade-episode", "environment/spade-episode-root")
    for rel, text in files.items():  # through no link planted in the target (file_writes)
        write_inside(target, f"{meta.id}/{rel}", text, mode=0o755 if rel in executable else 0o644)
    return folder


def export_harbor(
    envs: Iterable[tuple[str, EnvMetadata]],
    target: str | Path,
    runtime: TaskRuntime,
    *,
    seed: int = 0,
    overwrite: bool = False,
    on_item: Callable[[EnvMetadata], None] | None = None,
) -> int:
    """One Harbor task per environment under ``target``; returns how many were written."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise HarborError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not overwrite:
        raise HarborError(f"{target} is not empty; pass --force to write into it")
    target.mkdir(parents=True, exist_ok=True)
    n = 0
    for source, meta in envs:
        write_task(target, source, meta, runtime, seed=seed)
        n += 1
        if on_item is not None:
            on_item(meta)
    return n


def _safe_stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._")[:100] or "episode"


def export_atif(run: str | Path, target: str | Path, *, overwrite: bool = False) -> int:
    """One ATIF file per episode of ``run`` under the folder ``target``; returns how many.

    ``run`` is a run folder (its ``transcripts.jsonl``), such a JSON-lines file, or a
    Harbor task's episode file (``spade-episode.json``)."""
    from .jsonl import read_jsonl

    run, target = Path(run), Path(target)
    if run.is_dir():
        run = run / "transcripts.jsonl"
        if not run.is_file():
            raise HarborError(f"{run.parent} holds no transcripts.jsonl (a run keeps them when transcripts_per_env > 0)")
    if not run.is_file():
        raise HarborError(f"{run}: no such file")
    if target.exists() and not target.is_dir():
        raise HarborError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not overwrite:
        raise HarborError(f"{target} is not empty; pass --force to write into it")
    trajectories: list[tuple[str, dict[str, Any]]] = []
    if run.suffix == ".jsonl":
        rows = [r for r in read_jsonl(run) if not r.get("archive_full")]
        for i, row in enumerate(rows):
            stem = f"{i:05d}-{_safe_stem(str(row.get('env_id', 'episode')))}"
            trajectories.append((stem, trajectory_from_transcript(row, f"{run.parent.name}/{stem}")))
    else:
        episode = read_episode(run)
        stem = _safe_stem(str(episode.get("env_id", "episode")))
        trajectories.append((stem, trajectory_from_episode(episode, stem)))
    for stem, trajectory in trajectories:  # through no link planted in the target (file_writes)
        write_inside(target, f"{stem}.json", json.dumps(trajectory, indent=2, ensure_ascii=False) + "\n")
    return len(trajectories)


__all__ = [
    "ATIF_VERSION",
    "EPISODE_FILE",
    "LAYOUT_VERSION",
    "REWARD_FILE",
    "TASK_HOME",
    "TASK_KIND",
    "EpisodeTurn",
    "HarborError",
    "TaskRuntime",
    "atif_trajectory",
    "export_atif",
    "export_harbor",
    "harbor_path",
    "is_harbor_ref",
    "read_harbor_items",
    "task_folders",
    "trajectory_from_episode",
    "trajectory_from_transcript",
    "write_task",
]
