"""ACEBench's agent entries: reading the published files (``data_<category>.json`` and their
``possible_answer``), and the benchmark's scoring (``agent_eval``): calls written as its
milestones write them, milestone and process accuracy, end-state errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .dialogue import BenchmarkDataError, read_json_lines


class AceDataError(BenchmarkDataError):
    """An ACEBench file not in the published format."""


class NotImplementedInAdapter(NotImplementedError):
    """What the entry needs and this adapter does not implement (named in the message)."""


class AceEntry:
    def __init__(self, category: str, raw: dict[str, Any], answer: dict[str, Any]) -> None:
        self.category = category
        self.id = raw["id"]
        self.question = raw["question"]
        self.initial_config = raw["initial_config"]
        self.functions = raw["function"]
        self.involved = list(raw["involved_classes"])
        truth = answer["ground_truth"]
        self.ground_truth = truth if isinstance(truth, list) else [truth]
        stones = answer["mile_stone"]
        self.milestones: list[list[str]] = stones if stones and isinstance(stones[0], list) else [stones]


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise AceDataError(f"{where}: {what}")


def _check_entry(raw: Any, where: str) -> None:
    _need(isinstance(raw, dict), where, "must be an object")
    _need(isinstance(raw.get("id"), str), f"{where}: field id", "must be a string")
    where = f"{where} (id {raw['id']!r}): field"
    _need(isinstance(raw.get("question"), str), f"{where} question", "must be a string")
    config = raw.get("initial_config")
    _need(isinstance(config, dict) and all(isinstance(v, dict) for v in config.values()), f"{where} initial_config",
          "must be an object of {class: {attribute: value}}")
    fns = raw.get("function")
    _need(isinstance(fns, list) and all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in fns),
          f"{where} function", "must be a list of objects with a name")
    inv = raw.get("involved_classes")
    _need(isinstance(inv, list) and inv and all(isinstance(c, str) for c in inv), f"{where} involved_classes",
          "must be a non-empty list of class names")


def _check_answer(raw: Any, where: str) -> None:
    _need(isinstance(raw, dict), where, "must be an object")
    _need(isinstance(raw.get("id"), str), f"{where}: field id", "must be a string")
    where = f"{where} (id {raw['id']!r}): field"
    truth = raw.get("ground_truth")
    items = truth if isinstance(truth, list) else [truth]
    _need(all(isinstance(t, dict) and len(t) == 1 and isinstance(next(iter(t.values())), dict) for t in items),
          f"{where} ground_truth", "must be a list of {class: {attribute: value}} objects")
    stones = raw.get("mile_stone")
    ok = isinstance(stones, list) and (all(isinstance(s, str) for s in stones) or (
        bool(stones) and all(isinstance(s, list) and all(isinstance(x, str) for x in s) for s in stones)))
    _need(ok, f"{where} mile_stone", "must be a list of call strings, or a list of such lists")


def load_category(folder: Path, category: str) -> list[AceEntry]:
    """The entries of ``data_<category>.json`` with their ``possible_answer``."""
    path = folder / f"data_{category}.json"
    answers_path = folder / "possible_answer" / f"data_{category}.json"
    rows = read_json_lines(path, AceDataError)
    answers = read_json_lines(answers_path, AceDataError)
    for i, raw in enumerate(rows):
        _check_entry(raw, f"{path}: entry {i + 1}")
    by_id: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(answers):
        _check_answer(raw, f"{answers_path}: entry {i + 1}")
        by_id[raw["id"]] = raw
    missing = [r["id"] for r in rows if r["id"] not in by_id]
    _need(not missing, str(answers_path), f"no answer for {', '.join(missing)}")
    return [AceEntry(category, r, by_id[r["id"]]) for r in rows]


def render_value(value: Any) -> str:
    """A value as the benchmark's milestones write it: Python literals, strings in single
    quotes as they are (``'Domino's'``)."""
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"'{k}': {render_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def render_calls(calls: Sequence[Any]) -> str:
    """One agent message's calls as the benchmark writes them: ``[f(a='x'), g()]``."""
    return "[" + ", ".join(f"{c.name}(" + ", ".join(f"{k}={render_value(v)}" for k, v in c.arguments.items()) + ")"
                           for c in calls) + "]"


def milestone_accuracy(milestones: Sequence[str], process: Sequence[str]) -> float:
    """The share of ``milestones`` found in order in ``process`` (stripped text equality)."""
    if not milestones:
        return 1.0
    found, at = 0, 0
    for stone in milestones:
        while at < len(process):
            at += 1
            if process[at - 1].strip() == stone.strip():
                found += 1
                break
    return found / len(milestones)


def process_accuracy(alternatives: Sequence[Sequence[str]], process: Sequence[str]) -> float:
    """The best milestone accuracy over the alternatives, rounded to 3 places as the benchmark does."""
    return max(round(milestone_accuracy(m, process), 3) for m in alternatives)


def end_state_errors(truth: Sequence[dict[str, Any]], result: Sequence[dict[str, Any]]) -> list[str]:
    """Why ``result`` (per involved class, its saved attributes) is not the ground truth's end
    state (the benchmark's ``agent_eval`` with its ``agent_checker``); none when it is.

    As there, an answer class is compared with our class of exactly its name; an answer class
    named otherwise (the files' ``ReminderAPI``, ``Reminderpi``) matches none and is not
    compared, though it counts toward the number of classes."""
    if len(truth) != len(result):
        return [f"wrong number of classes: expected {len(truth)}, got {len(result)}"]
    ours = {next(iter(r)): next(iter(r.values())) for r in result}
    errors = []
    for expected in truth:
        name, attrs = next(iter(expected.items()))
        model = ours.get(name)
        if model is None:
            continue
        for attr, value in model.items():
            if attr not in attrs:
                errors.append(f"class({name}) attribute({attr}) missing in the answer")
            elif isinstance(attrs[attr], dict):
                if not isinstance(value, dict):
                    errors.append(f"class({name}) attribute({attr}) wrong: expected {attrs[attr]}, real {value}")
                    continue
                for key, want in attrs[attr].items():
                    if key not in value or value[key] != want:
                        errors.append(f"class({name}) attribute({attr}.{key}) wrong: expected {want}, "
                                      f"real {value.get(key, '<missing>')}")
            elif attrs[attr] != value:
                errors.append(f"class({name}) attribute({attr}) wrong: expected {attrs[attr]}, real {value}")
    return errors
