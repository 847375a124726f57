"""tau2-bench's tasks: the task model, ``tasks.json`` parsed field by field, the domain
folders of a data folder and the named task splits of ``split_tasks.json``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_core.actions import ToolCall

from ..dialogue import read_json
from ._common import Tau2DataError

#: The reward components a task's ``reward_basis`` may name (all scored here).
REWARD_TYPES = ("DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE")


@dataclass(frozen=True)
class Action:
    name: str
    arguments: dict[str, Any]
    requestor: str = "assistant"
    compare_args: tuple[str, ...] | None = None

    def matches(self, call: ToolCall) -> bool:
        """The benchmark's ``Action.compare_with_tool_call``."""
        if call.name != self.name:
            return False
        keys = list(call.arguments) if self.compare_args is None else list(self.compare_args)
        if not keys:
            return True
        return ({k: v for k, v in call.arguments.items() if k in keys}
                == {k: v for k, v in self.arguments.items() if k in keys})


@dataclass(frozen=True)
class Tau2Task:
    domain: str
    id: str
    instructions: str
    criteria: dict[str, Any] | None
    actions: tuple[Action, ...]
    reward_basis: tuple[str, ...]
    initial_state: dict[str, Any] | None
    folder: Path

    @property
    def label(self) -> str:
        return f"{self.domain}/{self.id}"

    @property
    def nl_assertions(self) -> list[str]:
        """The natural-language assertions the judge is asked about (none: an
        ``NL_ASSERTION`` component is 1 with no judge asked, as in the benchmark)."""
        return list((self.criteria or {}).get("nl_assertions") or [])


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise Tau2DataError(f"{where}: {what}")


def _instructions(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    _need(isinstance(value, dict), where, "must be a string or an object")
    for key in ("reason_for_call", "task_instructions"):
        _need(isinstance(value.get(key), str), f"{where}.{key}", "must be a string")
    parts = []
    if isinstance(value.get("domain"), str):
        parts.append(f"Domain: {value['domain']}")
    parts.append(f"Reason for call:\n\t{value['reason_for_call']}")
    for key, title in (("known_info", "Known info"), ("unknown_info", "Unknown info")):
        if value.get(key) is not None:
            _need(isinstance(value[key], str), f"{where}.{key}", "must be a string or null")
            parts.append(f"{title}:\n\t{value[key]}")
    parts.append(f"Task instructions:\n\t{value['task_instructions']}")
    return "\n".join(parts)


def parse_task(raw: Any, *, domain: str, path: Path, index: int) -> Tau2Task:
    """One task of ``tasks.json``, checked field by field."""
    where = f"{path}: task [{index}]"
    _need(isinstance(raw, dict), where, "must be an object")
    _need(isinstance(raw.get("id"), (str, int)) and not isinstance(raw.get("id"), bool), f"{where}.id",
          "must be a string")
    where = f"{path}: task {raw['id']!r}"
    scenario = raw.get("user_scenario")
    _need(isinstance(scenario, dict), f"{where}: field user_scenario", "must be an object")
    instructions = _instructions(scenario.get("instructions"), f"{where}: field user_scenario.instructions")
    if scenario.get("persona") is not None:
        _need(isinstance(scenario["persona"], str), f"{where}: field user_scenario.persona", "must be a string")
        instructions = f"Persona:\n\t{scenario['persona']}\nInstructions:\n{instructions}"
    criteria = raw.get("evaluation_criteria")
    actions: list[Action] = []
    basis: tuple[str, ...] = ("DB", "COMMUNICATE")
    if criteria is not None:
        _need(isinstance(criteria, dict), f"{where}: field evaluation_criteria", "must be an object or null")
        for k, a in enumerate(criteria.get("actions") or []):
            at = f"{where}: field evaluation_criteria.actions[{k}]"
            _need(isinstance(a, dict), at, "must be an object")
            _need(isinstance(a.get("name"), str) and a["name"], f"{at}.name", "must be a non-empty string")
            _need(isinstance(a.get("arguments"), dict), f"{at}.arguments", "must be an object")
            cmp = a.get("compare_args")
            _need(cmp is None or (isinstance(cmp, list) and all(isinstance(c, str) for c in cmp)),
                  f"{at}.compare_args", "must be a list of strings or null")
            requestor = a.get("requestor", "assistant")
            _need(requestor in ("assistant", "user"), f"{at}.requestor", "must be 'assistant' or 'user'")
            actions.append(Action(a["name"], a["arguments"], requestor, tuple(cmp) if cmp is not None else None))
        info = criteria.get("communicate_info")
        _need(info is None or (isinstance(info, list) and all(isinstance(s, str) for s in info)),
              f"{where}: field evaluation_criteria.communicate_info", "must be a list of strings or null")
        said = criteria.get("nl_assertions")
        _need(said is None or (isinstance(said, list) and all(isinstance(s, str) for s in said)),
              f"{where}: field evaluation_criteria.nl_assertions", "must be a list of strings or null")
        if "reward_basis" in criteria:
            rb = criteria["reward_basis"]
            _need(isinstance(rb, list) and all(r in REWARD_TYPES for r in rb),
                  f"{where}: field evaluation_criteria.reward_basis", f"must be a list of {', '.join(REWARD_TYPES)}")
            basis = tuple(rb)
    state = raw.get("initial_state")
    _need(state is None or isinstance(state, dict), f"{where}: field initial_state", "must be an object or null")
    return Tau2Task(domain, str(raw["id"]), instructions, criteria, tuple(actions), basis, state, path.parent)


def load_domain(folder: Path) -> list[Tau2Task]:
    """The tasks of one domain folder (``tasks.json``)."""
    path = folder / "tasks.json"
    raw = read_json(path, Tau2DataError)
    if not isinstance(raw, list):
        raise Tau2DataError(f"{path}: must hold a list of tasks, got {type(raw).__name__}")
    tasks = [parse_task(t, domain=folder.name, path=path, index=i) for i, t in enumerate(raw)]
    seen: set[str] = set()
    for t in tasks:
        _need(t.id not in seen, f"{path}: task {t.id!r}", "id appears twice")
        seen.add(t.id)
    return tasks


def domain_folders(data: Path, domains: Sequence[str] = ()) -> list[Path]:
    """The domain folders under ``data`` (or ``data`` itself when it holds ``tasks.json``)."""
    if not data.is_dir():
        raise Tau2DataError(f"{data}: no such folder (expected tau2-bench's data/tau2/domains layout)")
    found = [data] if (data / "tasks.json").is_file() else sorted(p for p in data.iterdir() if (p / "tasks.json").is_file())
    if domains:
        by_name = {p.name: p for p in found}
        missing = [d for d in domains if d not in by_name]
        if missing:
            raise Tau2DataError(f"{data}: no domain {', '.join(missing)} (found: {', '.join(by_name) or 'none'})")
        found = [by_name[d] for d in domains]
    if not found:
        raise Tau2DataError(f"{data}: holds no domain folder with a tasks.json")
    return found


def split_task_ids(folder: Path, name: str) -> set[str]:
    """The task ids of split ``name`` in the domain's ``split_tasks.json`` (the benchmark's
    named task subsets, such as telecom's ``base``)."""
    path = folder / "split_tasks.json"
    splits = read_json(path, Tau2DataError)
    if not isinstance(splits, dict) or not all(isinstance(v, list) for v in splits.values()):
        raise Tau2DataError(f"{path}: must hold an object of split name -> list of task ids")
    if name not in splits:
        raise Tau2DataError(f"{path}: no split {name!r} (splits: {', '.join(splits) or 'none'})")
    return {str(i) for i in splits[name]}
