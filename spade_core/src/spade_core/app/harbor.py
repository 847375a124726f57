r"""Environments as Harbor tasks, and episodes as ATIF trajectories (docs/harbor.md).

Harbor (the Laude Institute's agent-evaluation framework) runs an agent in a container
built from a *task* folder and scores it with the task's verifier. ``spade export
--to-harbor DIR`` writes one task per store environment:

* ``task.toml``: Harbor's configuration; SPADE's own record of the environment (id, name,
  version, domain, skill, code hash, action format, max turns, reward range, the episode
  seed) is the table ``[metadata.spade]``, whose ``kind = "gym"`` marks a task of ours;
  the verifier runs in a separate container, the agent as the non-root user ``agent``;
* ``instruction.md``: what the environment is and how to play it;
* ``environment/``: a Dockerfile installing SPADE (``requirements.txt``, pinned) and the
  environment under :data:`TASK_HOME` (``spade/env.py``, its full metadata document
  ``spade/metadata.json`` and ``spade/runtime.json``: seed and the domain's allowed
  modules); the agent plays through the command ``spade-episode`` (``start``, ``step
  ACTION``, ``show``), which runs the environment in SPADE's sandbox and keeps the
  transcript in :data:`EPISODE_FILE`, inside Harbor's artifacts folder, so that Harbor
  hands it to the verifier's container;
* ``tests/test.sh``: the verifier replays the transcript's actions in a fresh sandbox
  and writes the episode's return (:func:`spade_core.returns.episode_return`) to
  :data:`REWARD_FILE`, and the replayed episode as an ATIF trajectory beside it;
* ``solution/solve.sh`` plays the environment's own ``solution()``; the hint, when the
  environment has one, is the solution's note (``solution/hint.md``).

``spade import harbor:DIR`` reads such tasks back (:func:`read_harbor_items`: ``DIR`` is a
task or a folder of tasks) into the importer's :class:`~spade_core.app.importer.RawItem`,
so they take the one ``prepare`` / ``import_items`` path, status rules included; a task
that is not of our kind, or is damaged, is a failed item naming the task and the reason.

:func:`atif_trajectory` turns an episode (the prompt, then each action with the
environment's reply and reward) into ATIF, the Agent Trajectory Interchange Format
Harbor records runs in; ``spade export --to-atif DIR --run RUN`` writes one per
transcript of a run (``transcripts.jsonl``) or of a task's episode file.

The container side is :func:`main` (``python -m spade_core.app.harbor``), which the
task's ``spade-episode`` script and ``tests/test.sh`` call. Every write here is
JSON by the standard library, TOML by ``tomli_w``.
"""

from __future__ import annotations

import json
import math
import re
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..actions import parse_tool_action
from ..errors import ActionFormatError, SpadeError
from ..metadata import EnvMetadata
from ..returns import episode_return, is_win
from .dataset_files import (
    MAX_ROW_BYTES,
    MAX_SOURCE_BYTES,
    ImportSourceError,
    JSONNestingError,
    JSONSyntaxError,
    OutsideDataset,
    dataset_root,
    load_json,
    read_text_bounded,
    resolve_inside,
)
from .file_writes import write_inside
from .importer import RawItem

if TYPE_CHECKING:
    from ..env import TextEnv
    from ..plugins import SpadePlugins

#: ``[metadata.spade] kind`` of the tasks this module writes and reads.
TASK_KIND = "gym"
#: Version of the task layout below (``[metadata.spade] layout``).
LAYOUT_VERSION = 1
#: The ``task.toml`` schema the tasks are written to (Harbor's ``TaskConfig``).
HARBOR_SCHEMA_VERSION = "1.4"
#: Where the task's ``environment/spade/`` lands in the container.
TASK_HOME = "/opt/spade-task"
#: The transcript ``spade-episode`` keeps, inside Harbor's artifacts folder (collected
#: after the agent's turn and restored in the verifier's container).
EPISODE_FILE = "/logs/artifacts/spade-episode.json"
#: Where Harbor reads the verifier's reward, and where the replayed episode's ATIF goes.
REWARD_FILE = "/logs/verifier/reward.txt"
TRAJECTORY_FILE = "/logs/verifier/trajectory.json"
#: The ATIF version written (every field used exists there).
ATIF_VERSION = "ATIF-v1.6"
#: Largest ``task.toml`` / episode file read.
MAX_CONFIG_BYTES = 1_000_000
#: ``[metadata.spade]`` fields checked against ``environment/spade/metadata.json`` on import.
SUMMARY_FIELDS = ("id", "name", "version", "domain", "skill", "code_hash", "action_format", "max_turns", "reward_range")
#: How long Harbor gives the agent and the verifier (seconds).
AGENT_TIMEOUT_S = 1800.0
VERIFIER_TIMEOUT_S = 600.0
HARBOR_PREFIX = "harbor:"


class HarborError(SpadeError):
    """A Harbor task or episode cannot be written, read or played; the message says why."""


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
        "id": meta.id,
        "name": meta.name,
        "version": meta.version,
        "domain": meta.domain,
        "skill": meta.skill,
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
    return (
        "# SPADE task image: the environment runs in SPADE's sandbox behind `spade-episode`.\n"
        "FROM python:3.11-slim\n"
        f"COPY requirements.txt {TASK_HOME}/requirements.txt\n"
        f"RUN pip install --no-cache-dir -r {TASK_HOME}/requirements.txt\n"
        f"COPY spade/ {TASK_HOME}/\n"
        "COPY spade-episode /usr/local/bin/spade-episode\n"
        "RUN chmod 0755 /usr/local/bin/spade-episode \\\n"
        "    && useradd --create-home agent \\\n"
        "    && mkdir -p /logs/artifacts && chown agent /logs/artifacts\n"
        "WORKDIR /home/agent\n"
    )


def _script(command: str) -> str:
    return f"#!/bin/sh\nexec python -m spade_core.app.harbor {command}\n"


def write_task(
    target: Path, source: str, meta: EnvMetadata, runtime: TaskRuntime, *, seed: int = 0
) -> Path:
    """The task folder of one environment under ``target`` (``target/<id>``); returns it."""
    folder = target / meta.id
    files: dict[str, str] = {
        "task.toml": task_config(meta, seed),
        "instruction.md": instruction(meta),
        "environment/Dockerfile": dockerfile(),
        "environment/requirements.txt": "\n".join(runtime.pins_for(meta.domain)) + "\n",
        "environment/spade-episode": _script(f'episode --task {TASK_HOME} --episode {EPISODE_FILE} "$@"'),
        "environment/spade/env.py": source,
        "environment/spade/metadata.json": meta.model_dump_json(indent=2) + "\n",
        "environment/spade/runtime.json": json.dumps(
            {"seed": seed, "allowed_modules": list(runtime.allowed_modules.get(meta.domain, ()))}, indent=2
        )
        + "\n",
        "tests/test.sh": _script(
            f"verify --task {TASK_HOME} --episode {EPISODE_FILE} --reward {REWARD_FILE} --trajectory {TRAJECTORY_FILE}"
        ),
        "solution/solve.sh": _script(f"episode --task {TASK_HOME} --episode {EPISODE_FILE} solve"),
    }
    if meta.hint:
        files["solution/hint.md"] = f"# Hint\n\n{meta.hint.strip()}\n"
    for rel, text in files.items():  # through no link planted in the target (file_writes)
        write_inside(target, f"{meta.id}/{rel}", text, mode=0o755 if rel.endswith((".sh", "spade-episode")) else 0o644)
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


# --- import -----------------------------------------------------------------------------


def is_harbor_ref(text: str) -> bool:
    return text.startswith(HARBOR_PREFIX)


def harbor_path(text: str) -> Path:
    """The folder ``harbor:DIR`` names."""
    body = text[len(HARBOR_PREFIX) :].strip()
    if not body:
        raise ImportSourceError("harbor: needs a folder: harbor:DIR (a Harbor task, or a folder of tasks)")
    return Path(body).expanduser()


def task_folders(path: Path) -> list[Path]:
    """The task folders ``harbor:DIR`` names: ``path`` itself when it holds ``task.toml``,
    else its sub-folders (hidden ones left out), sorted."""
    if not path.exists():
        raise ImportSourceError(f"{path}: no such folder")
    if not path.is_dir():
        raise ImportSourceError(f"{path}: harbor: takes a folder (a Harbor task, or a folder of tasks)")
    if (path / "task.toml").exists() or (path / "task.toml").is_symlink():
        return [path]
    subs = sorted(p for p in path.iterdir() if not p.name.startswith(".") and (p.is_dir() or p.is_symlink()))
    if not subs:
        raise ImportSourceError(f"{path}: no Harbor task here (no task.toml, and no task folders)")
    return subs


def read_harbor_items(path: str | Path) -> list[RawItem]:
    """Every task under ``path`` as a :class:`RawItem` (``error`` set, naming the task and
    the problem, for anything that is not a readable task of our kind)."""
    path = Path(path)
    folders = task_folders(path)
    root = dataset_root(path)
    return [_read_task(folder, root) for folder in folders]


def _read_task(folder: Path, root: Path) -> RawItem:
    """One task as an item: whatever its files hold, a problem is this task's outcome only."""
    name = folder.name
    try:
        return RawItem(name, _task_row(folder, root), from_file=True)
    except HarborError as exc:
        return RawItem(name, error=str(exc), from_file=True)
    except RecursionError:
        return RawItem(name, error="a file of the task is nested too deeply to read", from_file=True)
    except Exception as exc:  # odd data a check of _task_row missed: still this task's alone
        return RawItem(name, error=f"unreadable task ({type(exc).__name__}: {exc})", from_file=True)


def _read(folder: Path, rel: str, root: Path, limit: int) -> str:
    path = folder / rel
    if not (path.exists() or path.is_symlink()):
        raise HarborError(f"{rel} is missing")
    try:
        real = resolve_inside(path, root, rel)
    except OutsideDataset as exc:
        raise HarborError(str(exc)) from None
    if not real.is_file():
        raise HarborError(f"{rel} is not a file")
    try:
        return read_text_bounded(real, limit, rel)
    except (OSError, ValueError) as exc:
        raise HarborError(f"cannot read {rel}: {exc}") from None


def _task_row(folder: Path, root: Path) -> dict[str, Any]:
    try:
        real = resolve_inside(folder, root, folder.name)
    except OutsideDataset as exc:
        raise HarborError(exc.reason) from None
    if not real.is_dir():
        raise HarborError("not a folder, so not a Harbor task")
    if not (folder / "task.toml").exists() and not (folder / "task.toml").is_symlink():
        raise HarborError("no task.toml: not a Harbor task")
    text = _read(folder, "task.toml", root, MAX_CONFIG_BYTES)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarborError(f"task.toml is not valid TOML: {exc}") from None
    except RecursionError:
        raise HarborError("task.toml is nested too deeply to read") from None
    metadata = config.get("metadata")
    summary = metadata.get("spade") if isinstance(metadata, dict) else None
    if not isinstance(summary, dict) or summary.get("kind") != TASK_KIND:
        kind = summary.get("kind") if isinstance(summary, dict) else None
        what = f"[metadata.spade] kind is {kind!r}" if kind is not None else "task.toml has no [metadata.spade] table"
        raise HarborError(f"not a SPADE gym task ({what}; spade import reads the tasks spade export --to-harbor writes)")
    layout = summary.get("layout")
    if layout != LAYOUT_VERSION:
        raise HarborError(f"[metadata.spade] layout is {layout!r}; this SPADE reads layout {LAYOUT_VERSION}")
    code = _read(folder, "environment/spade/env.py", root, MAX_SOURCE_BYTES)
    meta_text = _read(folder, "environment/spade/metadata.json", root, MAX_ROW_BYTES)
    try:
        document = load_json(meta_text)
    except JSONSyntaxError as exc:
        raise HarborError(f"environment/spade/metadata.json is not valid JSON: {exc}") from None
    except (JSONNestingError, ValueError) as exc:
        raise HarborError(f"environment/spade/metadata.json is JSON {exc}") from None
    if not isinstance(document, dict) or "schema_version" not in document:
        raise HarborError("environment/spade/metadata.json is not a SPADE metadata document")
    for key in SUMMARY_FIELDS:
        recorded, documented = summary.get(key), document.get(key)
        same = _same_range(recorded, documented) if key == "reward_range" else recorded == documented
        if not same:
            raise HarborError(
                f"task.toml's [metadata.spade] {key} ({recorded!r}) differs from environment/spade/metadata.json "
                f"({documented!r}); was one of them edited?"
            )
    return {**document, "code": code}


def _same_range(recorded: Any, documented: Any) -> bool:
    """Whether two reward ranges are the same numbers (anything but two lists of numbers
    is not)."""
    def numbers(value: Any) -> list[float] | None:
        if not isinstance(value, list) or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
            return None
        return [float(x) for x in value]

    a, b = numbers(recorded), numbers(documented)
    return a is not None and a == b


# --- ATIF -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EpisodeTurn:
    """One action of an episode and what the environment answered."""

    action: str
    observation: str | None = None
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False


def atif_trajectory(
    *,
    session_id: str,
    prompts: Sequence[tuple[str, str]],
    turns: Sequence[EpisodeTurn],
    agent_name: str = "spade",
    model_name: str | None = None,
    result: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An episode as an ATIF trajectory (a JSON-ready dict).

    ``prompts`` are ``(role, text)`` before the first action (``system`` stays a system
    step, anything else is a ``user`` step: the environment's first observation); each
    turn is an ``agent`` step whose message is the action, whose observation is the
    environment's reply, and whose ``extra`` holds the reward and the end flags. An action's
    ``<tool_call>`` tags are the step's ``tool_calls`` too (the reply's ``source_call_id``
    names the call when there is one).
    ``result`` (the return, success...) goes to ``final_metrics.extra``."""
    steps: list[dict[str, Any]] = []
    for role, text in prompts:
        steps.append({"step_id": len(steps) + 1, "source": "system" if role == "system" else "user", "message": text})
    for turn in turns:
        step_id = len(steps) + 1
        step: dict[str, Any] = {"step_id": step_id, "source": "agent", "message": turn.action}
        calls = _tool_calls(turn.action, step_id)
        if calls:
            step["tool_calls"] = calls
        if turn.observation is not None:
            reply: dict[str, Any] = {"content": turn.observation}
            if len(calls) == 1:  # the environment's one reply answers that call
                reply["source_call_id"] = calls[0]["tool_call_id"]
            step["observation"] = {"results": [reply]}
        step_extra: dict[str, Any] = {"terminated": turn.terminated, "truncated": turn.truncated}
        if turn.reward is not None:
            step_extra["reward"] = turn.reward
        step["extra"] = step_extra
        steps.append(step)
    if not steps:
        raise HarborError(f"{session_id}: an episode with no prompt and no action has no ATIF trajectory")
    agent: dict[str, Any] = {"name": agent_name, "version": __version__}
    if model_name:
        agent["model_name"] = model_name
    out: dict[str, Any] = {"schema_version": ATIF_VERSION, "session_id": session_id, "agent": agent, "steps": steps}
    out["final_metrics"] = {"total_steps": len(steps), "extra": dict(result or {})}
    if extra:
        out["extra"] = dict(extra)
    return out


def _tool_calls(action: str, step_id: int) -> list[dict[str, Any]]:
    """The ``<tool_call>`` tags of an action as ATIF tool calls (ids ``call-<step>-<n>``);
    none for an action without tags or with a malformed one (it stays the step's message)."""
    try:
        parsed = parse_tool_action(action)
    except ActionFormatError:
        return []
    return [{"tool_call_id": f"call-{step_id}-{n}", "function_name": call.name, "arguments": dict(call.arguments)}
            for n, call in enumerate(parsed.calls, 1)]


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def trajectory_from_transcript(row: Mapping[str, Any], session_id: str) -> dict[str, Any]:
    """A run's transcript row (``transcripts.jsonl`` of the run archive: ``messages``,
    ``rewards``, ``return``...) as ATIF. The reply after the last action is not recorded
    there, so the last agent step has no observation."""
    messages = row.get("messages")
    if not isinstance(messages, list):
        raise HarborError(f"{session_id}: the transcript has no list of messages")
    rewards = row.get("rewards") if isinstance(row.get("rewards"), list) else []
    texts = [(str(m.get("role")), str(m.get("content") or "")) for m in messages if isinstance(m, Mapping)]
    first_action = next((i for i, (role, _) in enumerate(texts) if role == "assistant"), len(texts))
    prompts = texts[:first_action]
    turns: list[EpisodeTurn] = []
    rest = texts[first_action:]
    for i, (role, text) in enumerate(rest):
        if role != "assistant":
            continue
        reply = rest[i + 1][1] if i + 1 < len(rest) and rest[i + 1][0] != "assistant" else None
        k = len(turns)
        turns.append(EpisodeTurn(text, reply, _finite(rewards[k]) if k < len(rewards) else None))
    if turns:
        last = turns[-1]
        turns[-1] = EpisodeTurn(
            last.action, last.observation, last.reward, bool(row.get("terminated")), bool(row.get("truncated"))
        )
    result = {k: row[k] for k in ("return", "turns", "terminated", "truncated", "hung", "error") if k in row}
    if _finite(row.get("return")) is not None:
        result["success"] = is_win(float(row["return"]))
    extra = {k: row[k] for k in ("env_id", "iteration", "hinted") if k in row}
    return atif_trajectory(session_id=session_id, prompts=prompts, turns=turns, result=result, extra=extra)


def trajectory_from_episode(episode: Mapping[str, Any], session_id: str) -> dict[str, Any]:
    """A task's episode file (what ``spade-episode`` keeps) as ATIF."""
    turns = [_turn(t) for t in episode.get("turns", [])]
    last = turns[-1] if turns else None
    ret = episode_return(last.reward if last else None, bool(last and last.terminated), error=HarborError)
    result = {"return": ret, "success": is_win(ret), "turns": len(turns)}
    return atif_trajectory(
        session_id=session_id,
        prompts=[("user", str(episode.get("first_observation", "")))],
        turns=turns,
        result=result,
        extra={"env_id": episode.get("env_id"), "seed": episode.get("seed")},
    )


def _turn(data: Any) -> EpisodeTurn:
    if not isinstance(data, Mapping) or not isinstance(data.get("action"), str):
        raise HarborError("the episode file holds a turn without an action")
    return EpisodeTurn(
        data["action"],
        str(data.get("observation", "")),
        _finite(data.get("reward")),
        bool(data.get("terminated")),
        bool(data.get("truncated")),
    )


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
    for stem, trajectory in trajectories:
        _write_json(target / f"{stem}.json", trajectory)
    return len(trajectories)


def _write_json(path: Path, value: Any) -> None:
    """``value`` as JSON at ``path``, written through no link (:func:`write_inside`: a
    task's agent can write to the folders its container side writes in)."""
    write_inside(path.parent, path.name, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


# --- the container side: playing and verifying an episode -------------------------------


def read_episode(path: Path) -> dict[str, Any]:
    """An episode file; :class:`HarborError` when it is not one."""
    try:
        text = read_text_bounded(path, MAX_CONFIG_BYTES, str(path))
    except OSError as exc:
        raise HarborError(f"cannot read the episode file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise HarborError(str(exc)) from None
    try:
        data = load_json(text)
    except ValueError as exc:
        raise HarborError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != "spade-episode" or not isinstance(data.get("turns"), list):
        raise HarborError(f"{path} is not a SPADE episode file")
    return data


@dataclass
class TaskEnvironment:
    """The environment of a task, as the container holds it (``TASK_HOME``)."""

    source: str
    metadata: EnvMetadata
    seed: int
    allowed_modules: tuple[str, ...]

    @classmethod
    def load(cls, folder: Path) -> TaskEnvironment:
        try:
            source = (folder / "env.py").read_text(encoding="utf-8")
            metadata = EnvMetadata.model_validate_json((folder / "metadata.json").read_text(encoding="utf-8"))
            runtime = json.loads((folder / "runtime.json").read_text(encoding="utf-8"))
            seed, allowed = int(runtime.get("seed", 0)), tuple(str(m) for m in runtime.get("allowed_modules", ()))
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise HarborError(f"the task's environment under {folder} cannot be read: {exc}") from None
        return cls(source, metadata, seed, allowed)

    def open(self) -> TextEnv:
        """The environment in SPADE's sandbox (the configuration's ``[spade.sandbox]``)."""
        from ..config import load_config
        from ..plugins import get_plugins

        runner = get_plugins().env_runners().get("sandbox")
        if runner is None:
            raise HarborError("spade-sandbox is not installed here: the environment runs only in its sandbox")
        m = self.metadata
        env: TextEnv = runner.make_env(
            self.source,
            max_turns=m.max_turns,
            allowed_modules=self.allowed_modules,
            reward_range=m.reward_range,
            class_name=m.class_name,
            render_mode=None,
            sandbox=load_config().sandbox,
        )
        return env


class Episode:
    """One episode of a task, replayed from its recorded actions on every command (each
    command is a process of its own; the environment is seeded, so a replay reaches the
    same state, and a replay that does not is an error)."""

    def __init__(self, task: TaskEnvironment, record: dict[str, Any] | None = None) -> None:
        from .play import PlaySession

        self.task = task
        self.record = record
        self.env = task.open()
        self.session = PlaySession(self.env, task.metadata.action_format, task.seed)

    def close(self) -> None:
        self.env.close()

    @property
    def turns(self) -> list[dict[str, Any]]:
        return self.record["turns"] if self.record else []

    @property
    def over(self) -> bool:
        t = self.turns
        return bool(t) and (t[-1]["terminated"] or t[-1]["truncated"] or len(t) >= self.task.metadata.max_turns)

    def start(self) -> str:
        first = self.session.reset()
        if self.record is None:
            self.record = {
                "format": "spade-episode",
                "version": 1,
                "env_id": self.task.metadata.id,
                "seed": self.task.seed,
                "first_observation": first.observation,
                "turns": [],
            }
        elif first.observation != self.record["first_observation"]:
            raise HarborError("the environment did not start as recorded (is it nondeterministic?)")
        return first.observation

    def replay(self, *, check: bool = True) -> None:
        """Start and take every recorded action again."""
        self.start()
        for i, turn in enumerate(self.turns, 1):
            done = self._step(turn["action"])
            if check and done["observation"] != turn["observation"]:
                raise HarborError(f"turn {i} did not replay as recorded (is the environment nondeterministic?)")

    def _step(self, text: str) -> dict[str, Any]:
        # Straight to the environment: a typed line starting with ':' is a command of
        # ``spade play`` (:solution reveals the answer), never of an agent's episode.
        action = self.session.to_action(text.strip())
        try:
            obs, reward, terminated, truncated, _info = self.env.step(action)
        except SpadeError as exc:
            raise HarborError(f"the environment failed: {exc}") from None
        terminated, truncated = bool(terminated), bool(truncated)
        at_limit = len(self.turns) + 1 >= self.task.metadata.max_turns
        return {
            "action": action,
            "observation": str(obs),
            "reward": float(reward),
            "terminated": terminated,
            "truncated": truncated or (at_limit and not terminated),
        }

    def step(self, action: str) -> dict[str, Any]:
        if self.over:
            raise HarborError("the episode is over (spade-episode show prints it)")
        turn = self._step(action)
        self.turns.append(turn)
        return turn


def _save(path: Path, record: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_json(path, record)


def _print_turn(n: int, turn: Mapping[str, Any], out: Callable[[str], None]) -> None:
    from ..terminal import printable

    out(f"--- turn {n}: {printable(turn['action'])}")
    out(printable(turn["observation"]))
    flags = [f for f in ("terminated", "truncated") if turn[f]]
    out(f"reward {turn['reward']:g}" + (f" ({', '.join(flags)}: the episode is over)" if flags else ""))


def play_command(task_dir: Path, episode_file: Path, command: str, action: str | None, out: Callable[[str], None]) -> int:
    """``spade-episode start | step ACTION | show | solve``."""
    from ..terminal import printable

    task = TaskEnvironment.load(task_dir)
    record = read_episode(episode_file) if episode_file.exists() else None
    if command == "show":
        if record is None:
            out("no episode yet: spade-episode start")
            return 0
        out(printable(record["first_observation"]))
        for n, turn in enumerate(record["turns"], 1):
            _print_turn(n, turn, out)
        return 0
    if command == "start" and record is not None and record["turns"]:
        raise HarborError("the episode has started already and cannot be restarted (spade-episode show prints it)")
    if command == "step" and record is None:
        raise HarborError("no episode yet: spade-episode start")
    episode = Episode(task, record)
    try:
        if command == "start":
            out(printable(episode.start()))
            _save(episode_file, episode.record or {})
            return 0
        episode.replay()
        if command == "step":
            if not action or not action.strip():
                raise HarborError("spade-episode step needs an action")
            turn = episode.step(action)
            _save(episode_file, episode.record or {})
            _print_turn(len(episode.turns), turn, out)
            return 0
        if command == "solve":
            try:
                solution = episode.env.solution()
            except NotImplementedError:
                raise HarborError("this environment provides no solution()") from None
            for a in solution if isinstance(solution, list) else [solution]:
                if episode.over:
                    break
                _print_turn(len(episode.turns) + 1, episode.step(a), out)
            _save(episode_file, episode.record or {})
            return 0
    finally:
        episode.close()
    raise HarborError(f"unknown command {command!r}")


def verify(task_dir: Path, episode_file: Path, reward_file: Path, trajectory_file: Path | None) -> float:
    """Replay the recorded actions in a fresh sandbox and write the episode's return to
    ``reward_file`` (0 when there is no episode, or it cannot be replayed)."""
    reward_file.parent.mkdir(parents=True, exist_ok=True)
    task = TaskEnvironment.load(task_dir)
    ret = 0.0
    if not episode_file.exists():
        reward_file.write_text(f"{ret}\n", encoding="utf-8")
        return ret
    try:
        record = read_episode(episode_file)
        actions = [_turn(t).action for t in record["turns"]][: task.metadata.max_turns]
        episode = Episode(task)
        try:
            episode.start()
            for action in actions:
                if episode.over:
                    break
                episode.step(action)
        finally:
            episode.close()
        replayed = episode.record or {}
        last = replayed["turns"][-1] if replayed.get("turns") else None
        ret = episode_return(last["reward"] if last else None, bool(last and last["terminated"]), error=HarborError)
        if trajectory_file is not None:
            trajectory_file.parent.mkdir(parents=True, exist_ok=True)
            _write_json(trajectory_file, trajectory_from_episode(replayed, task.metadata.id))
    finally:
        reward_file.write_text(f"{ret}\n", encoding="utf-8")
    return ret


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m spade_core.app.harbor episode ... | verify ...`` (the task's scripts)."""
    import argparse

    parser = argparse.ArgumentParser(prog="spade-episode", description="Play or verify a SPADE Harbor task's episode.")
    sub = parser.add_subparsers(dest="what", required=True)
    play = sub.add_parser("episode", help="play the episode")
    play.add_argument("--task", type=Path, default=Path(TASK_HOME))
    play.add_argument("--episode", type=Path, default=Path(EPISODE_FILE))
    play.add_argument("command", choices=["start", "step", "show", "solve"])
    play.add_argument("action", nargs="*")
    check = sub.add_parser("verify", help="replay the recorded episode and write its reward")
    check.add_argument("--task", type=Path, default=Path(TASK_HOME))
    check.add_argument("--episode", type=Path, default=Path(EPISODE_FILE))
    check.add_argument("--reward", type=Path, default=Path(REWARD_FILE))
    check.add_argument("--trajectory", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        if args.what == "verify":
            ret = verify(args.task, args.episode, args.reward, args.trajectory)
            print(f"reward {ret:g}")
            return 0
        return play_command(args.task, args.episode, args.command, " ".join(args.action) or None, print)
    except SpadeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


__all__ = [
    "ATIF_VERSION",
    "EPISODE_FILE",
    "REWARD_FILE",
    "TASK_KIND",
    "EpisodeTurn",
    "HarborError",
    "TaskRuntime",
    "atif_trajectory",
    "export_atif",
    "export_harbor",
    "harbor_path",
    "is_harbor_ref",
    "read_episode",
    "read_harbor_items",
    "task_folders",
    "trajectory_from_episode",
    "trajectory_from_transcript",
    "verify",
    "write_task",
]


if __name__ == "__main__":
    sys.exit(main())
