"""The BFCL-v4 multi-turn data: entries, their ground truth and the function documents.

The data is read from a folder laid out as the ``data`` folder of the ``bfcl-eval``
package (``BFCL_v4_multi_turn_<category>.json``, ``possible_answer/`` and
``multi_turn_func_doc/``): by default the installed package's own, which holds the 800
multi-turn entries of the release it pins; ``root=`` names another such folder (a newer
release's, a checkout of the benchmark's repository) without reinstalling.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from spade_core.errors import SpadeError

CATEGORIES: tuple[str, ...] = ("base", "miss_func", "miss_param", "long_context")
#: The module of ``bfcl_eval.eval_checker.multi_turn_eval.func_source_code`` of each API class
#: (its function documents are named after it too).
API_MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}


class BfclDataError(SpadeError):
    """The BFCL data or API classes are missing or not as expected (``bfcl-eval`` not
    installed, an unknown entry id, a ground-truth call that is not a literal call)."""


def data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl_eval`` package."""
    try:
        import bfcl_eval
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise BfclDataError(
            "the BFCL suite needs the 'bfcl-eval' package (pip install --no-deps bfcl-eval mpmath)"
        ) from exc
    return Path(bfcl_eval.__file__).parent / "data"


def _root(root: Path | str | None) -> Path:
    if root is None:
        return data_dir()
    path = Path(root).expanduser()
    if not path.is_dir():
        raise BfclDataError(f"BFCL data folder {path} does not exist (it should hold BFCL_v4_multi_turn_*.json, "
                            "possible_answer/ and multi_turn_func_doc/, as bfcl_eval/data does)")
    return path


@dataclass(frozen=True)
class BfclEntry:
    """One multi-turn entry with its ground truth."""

    id: str
    category: str
    #: User messages per turn (an empty list on a reveal turn).
    questions: tuple[tuple[str, ...], ...]
    initial_config: dict[str, Any]
    involved_classes: tuple[str, ...]
    #: Turn index -> names of functions withheld until that turn.
    missed_functions: dict[int, tuple[str, ...]]
    ground_truth: tuple[tuple[str, ...], ...]
    #: The data folder the entry was read from (``None``: the installed package's).
    data_root: Path | None = None

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category

    def raw(self) -> dict[str, Any]:
        """The entry in the benchmark's own shape (what its checker reads)."""
        return {
            "id": self.id,
            "initial_config": copy.deepcopy(self.initial_config),
            "involved_classes": list(self.involved_classes),
        }


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise BfclDataError(f"BFCL data file {path.name} not found in {path.parent}")
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@cache
def _load_category(category: str, root: Path | None) -> tuple[BfclEntry, ...]:
    if category not in CATEGORIES:
        raise BfclDataError(f"unknown BFCL multi-turn category {category!r} (known: {', '.join(CATEGORIES)})")
    base = _root(root)
    questions = _read_jsonl(base / f"BFCL_v4_multi_turn_{category}.json")
    answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(base / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json")}
    out = []
    for q in questions:
        if q["id"] not in answers:
            raise BfclDataError(f"entry {q['id']} has no ground truth")
        out.append(
            BfclEntry(
                id=q["id"],
                category=f"multi_turn_{category}",
                questions=tuple(tuple(m["content"] for m in turn) for turn in q["question"]),
                initial_config=q.get("initial_config", {}),
                involved_classes=tuple(q["involved_classes"]),
                missed_functions={int(k): tuple(v) for k, v in q.get("missed_function", {}).items()},
                ground_truth=tuple(tuple(turn) for turn in answers[q["id"]]),
                data_root=root,
            )
        )
    return tuple(out)


def load_entries(categories: Iterable[str] = CATEGORIES, *, root: Path | str | None = None) -> list[BfclEntry]:
    """Every entry of the given categories, in file order (from ``root``, default the
    installed package's data)."""
    resolved = None if root is None else _root(root).resolve()
    return [e for c in categories for e in _load_category(c, resolved)]


@cache
def _entry_index() -> dict[str, BfclEntry]:
    return {e.id: e for e in load_entries()}


def get_entry(entry_id: str) -> BfclEntry:
    """The entry ``entry_id`` of the installed package's data."""
    try:
        return _entry_index()[entry_id]
    except KeyError:
        raise BfclDataError(f"no BFCL multi-turn entry {entry_id!r}") from None


@cache
def function_docs(class_name: str, root: Path | None = None) -> tuple[dict[str, Any], ...]:
    """The benchmark's documents of the functions of one API class."""
    if class_name not in API_MODULES:
        raise BfclDataError(f"unknown API class {class_name!r} (known: {', '.join(API_MODULES)})")
    return tuple(_read_jsonl(_root(root) / "multi_turn_func_doc" / f"{API_MODULES[class_name]}.json"))


_TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array"}


def _to_json_schema(node: Any) -> Any:
    """BFCL's parameter dialect ("dict", "float", "any", ...) in JSON-Schema words."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "type" and isinstance(v, str):
                if v == "any":
                    continue
                out[k] = _TYPE_MAP.get(v, v)
            elif k == "properties" and isinstance(v, dict):
                out[k] = {name: _to_json_schema(p) for name, p in v.items()}
            else:
                out[k] = _to_json_schema(v)
        return out
    if isinstance(node, list):
        return [_to_json_schema(x) for x in node]
    return node


def openai_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """One BFCL function document as an OpenAI-format tool schema."""
    params = _to_json_schema(doc.get("parameters", {"type": "dict", "properties": {}}))
    params["type"] = "object"
    return {"type": "function", "function": {"name": doc["name"], "description": doc.get("description", ""), "parameters": params}}
