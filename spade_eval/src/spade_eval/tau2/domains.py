"""The domains this adapter implements: each one's tools, a dual-control domain's user side,
the tools it lacks, what a task needs that is not here, and a domain folder's database and
policy."""

from __future__ import annotations

import datetime
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dialogue import read_json
from ._common import NotImplementedInAdapter, Tau2DataError, deep_update
from .airline import AIRLINE_NOT_IMPLEMENTED, AIRLINE_TOOLS, AirlineTools
from .retail import RETAIL_NOT_IMPLEMENTED, RETAIL_TOOLS, RetailTools
from .tasks import Tau2Task
from .telecom import TELECOM_NOT_IMPLEMENTED, TELECOM_TOOLS, TelecomTools, telecom_sync
from .telecom_phone import default_telecom_user_db
from .telecom_user import TELECOM_USER_TOOLS, TelecomUserTools

#: Domains whose tools are implemented.
DOMAINS: dict[str, tuple[type, dict[str, dict[str, Any]]]] = {"retail": (RetailTools, RETAIL_TOOLS),
                                                               "airline": (AirlineTools, AIRLINE_TOOLS),
                                                               "telecom": (TelecomTools, TELECOM_TOOLS)}
#: Per implemented domain, the benchmark's tools of that domain this adapter lacks.
NOT_IMPLEMENTED: dict[str, tuple[str, ...]] = {"retail": RETAIL_NOT_IMPLEMENTED, "airline": AIRLINE_NOT_IMPLEMENTED,
                                               "telecom": TELECOM_NOT_IMPLEMENTED}


@dataclass(frozen=True)
class UserSide:
    """A dual-control domain's user side: the user's tools over the user database, their
    declarations, the default user database, and what the agent's database tells it."""

    tools: type
    declared: dict[str, dict[str, Any]]
    default_db: Callable[[], dict[str, Any]]
    sync: Callable[[Any, Any], None]


#: Domains whose user has tools too (dual control).
USER_SIDES: dict[str, UserSide] = {
    "telecom": UserSide(TelecomUserTools, TELECOM_USER_TOOLS, default_telecom_user_db, telecom_sync)}


def side_functions(domain: str, side: str) -> set[str]:
    """What a task file may call by name on one side of the domain: its tools and its
    environment functions (initial-state actions, assertions)."""
    if side == "assistant":
        cls, declared = DOMAINS[domain]
    elif domain in USER_SIDES:
        cls, declared = USER_SIDES[domain].tools, USER_SIDES[domain].declared
    else:
        return set()
    return set(declared) | set(getattr(cls, "ENV_FUNCTIONS", ()))


def _env_calls(task: Tau2Task) -> list[tuple[str, dict[str, Any]]]:
    """The task's environment function calls, named: its initial-state actions and, when
    scored, its assertions."""
    state = task.initial_state or {}
    calls = [(f"initialization action {k}", a) for k, a in enumerate(state.get("initialization_actions") or [])]
    if task.criteria is not None and "ENV_ASSERTION" in task.reward_basis:
        calls += [(f"env assertion {k}", a) for k, a in enumerate(task.criteria.get("env_assertions") or [])]
    return calls


def check_supported(task: Tau2Task) -> None:
    """Raise :class:`NotImplementedInAdapter` naming what ``task`` needs that is not here."""
    if task.domain not in DOMAINS:
        raise NotImplementedInAdapter(f"tau2 domain {task.domain!r}: its tools are not implemented by this adapter "
                                      f"(implemented: {', '.join(DOMAINS)})")
    declared = DOMAINS[task.domain][1]
    missing = sorted({a.name for a in task.actions if a.requestor == "assistant" and a.name not in declared})
    if missing:
        raise NotImplementedInAdapter(f"tau2 task {task.label}: tool {', '.join(missing)} is not implemented by this "
                                      f"adapter (the {task.domain} tools implemented: {', '.join(declared)})")
    user_side = USER_SIDES.get(task.domain)
    if any(a.requestor == "user" for a in task.actions):
        if user_side is None:
            raise NotImplementedInAdapter(f"tau2 task {task.label}: user-side actions (dual-control tools) are not "
                                          f"implemented for the {task.domain} domain (its user has no tools here)")
        missing = sorted({a.name for a in task.actions if a.requestor == "user" and a.name not in user_side.declared})
        if missing:
            raise NotImplementedInAdapter(f"tau2 task {task.label}: user tool {', '.join(missing)} is not implemented "
                                          f"by this adapter")
    for where, call in _env_calls(task):
        if not isinstance(call, dict) or not isinstance(call.get("func_name"), str):
            raise Tau2DataError(f"tau2 task {task.label}: {where} must be an object with a func_name")
        side = call.get("env_type", "assistant")
        if side not in ("assistant", "user"):
            raise Tau2DataError(f"tau2 task {task.label}: {where}: env_type must be 'assistant' or 'user', got {side!r}")
        if call["func_name"] not in side_functions(task.domain, side):
            raise NotImplementedInAdapter(f"tau2 task {task.label}: {where}: the {side}-side function "
                                          f"{call['func_name']!r} is not implemented by this adapter (domain "
                                          f"{task.domain})")
    state = task.initial_state or {}
    data = state.get("initialization_data") or {}
    if state.get("message_history"):
        raise NotImplementedInAdapter(f"tau2 task {task.label}: an initial message history is not implemented")
    if data.get("user_data") and user_side is None:
        raise NotImplementedInAdapter(f"tau2 task {task.label}: initial user data is not implemented for the "
                                      f"{task.domain} domain (its user has no tools here)")


def _plain(value: Any) -> Any:
    """A TOML value as JSON would hold it (dates and times as ISO strings)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return value


def _read_data(folder: Path, stem: str, *, required: bool) -> dict[str, Any] | None:
    """``{stem}.json``, else ``{stem}.toml`` (the benchmark's telecom databases are TOML)."""
    path = folder / f"{stem}.json"
    if path.is_file():
        data = read_json(path, Tau2DataError)
    elif (folder / f"{stem}.toml").is_file():
        path = folder / f"{stem}.toml"
        try:
            data = _plain(tomllib.loads(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise Tau2DataError(f"{path}: not TOML ({exc})") from None
    elif required:
        raise Tau2DataError(f"{folder}: no {stem}.json or {stem}.toml")
    else:
        return None
    if not isinstance(data, dict):
        raise Tau2DataError(f"{path}: must hold an object")
    return data


def _read_policy(folder: Path) -> str:
    """``policy.md``; else the telecom layout's ``main_policy.md`` with its
    ``tech_support_manual.md``, joined as the benchmark joins them; else no policy."""
    if (folder / "policy.md").is_file():
        return (folder / "policy.md").read_text(encoding="utf-8")
    if not (folder / "main_policy.md").is_file():
        return ""
    text = f"<main_policy>\n{(folder / 'main_policy.md').read_text(encoding='utf-8')}\n</main_policy>"
    manual = folder / "tech_support_manual.md"
    if manual.is_file():
        text += f"\n<tech_support_policy>\n{manual.read_text(encoding='utf-8')}\n</tech_support_policy>"
    return text


def read_domain(folder: Path, domain: str) -> dict[str, Any]:
    """A domain folder's database (``db``), user database (``user_db``: the default one of
    a dual-control domain with ``user_db.json``/``.toml`` merged in, else ``None``) and
    policy (``policy``), each checked."""
    db = _read_data(folder, "db", required=True)
    assert db is not None
    DOMAINS[domain][0](db)  # checks the top-level fields
    user_db = None
    side = USER_SIDES.get(domain)
    if side is not None:
        user_db = side.default_db()
        extra = _read_data(folder, "user_db", required=False)
        if extra:
            deep_update(user_db, extra)
        side.tools(user_db)
    return {"db": db, "user_db": user_db, "policy": _read_policy(folder)}
