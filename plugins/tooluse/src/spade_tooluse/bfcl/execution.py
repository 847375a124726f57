"""Calls on the benchmark's API classes, executed and rendered as its executor does.

The stateful API classes (file system, trading bot, travel booking, ...) are the installed
``bfcl-eval`` package's own: trusted package code, run in this process. This module only
instantiates them from an entry's initial configuration and calls their public methods by
name (never by evaluating text).
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
from functools import cache
from typing import Any

from spade_core.actions import ToolCall

from .loader import API_MODULES, BfclDataError, BfclEntry

#: Function names the benchmark's executor refuses to run.
REFUSED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
#: Classes whose instances need no initial configuration.
STATELESS = frozenset({"MathAPI"})
_API_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``name(pos, key=value)`` with literal arguments -> (name, positional, keyword)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise BfclDataError(f"ground-truth call {text!r} is not Python syntax: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise BfclDataError(f"ground-truth call {text!r} is not a plain function call")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        raise BfclDataError(f"ground-truth call {text!r} has a non-literal argument") from None
    return node.func.id, args, kwargs


def call_string(c: ToolCall) -> str:
    """A tool call in the benchmark's decoded form, ``name(key=value, ...)``."""
    return f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())})"


def _format_result(value: Any) -> str:
    # The benchmark's executor: strings as they are, dicts as JSON when they can be.
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _api_class(class_name: str) -> type:
    module_name = API_MODULES.get(class_name)
    if module_name is None:
        raise BfclDataError(f"unknown API class {class_name!r} (known: {', '.join(API_MODULES)})")
    return getattr(importlib.import_module(f"{_API_PACKAGE}.{module_name}"), class_name)


@cache
def method_names(class_name: str) -> frozenset[str]:
    """The public methods of one API class: the names the benchmark's executor dispatches."""
    instance = _api_class(class_name)()
    return frozenset(n for n, _ in inspect.getmembers(instance, predicate=inspect.ismethod) if not n.startswith("_"))


class ApiSet:
    """One set of API instances for an entry (agent-driven or answer-driven)."""

    def __init__(self, entry: BfclEntry) -> None:
        self.instances: dict[str, Any] = {}
        self.owner: dict[str, str] = {}  # method name -> class name; later classes win, as in the benchmark
        for class_name in entry.involved_classes:
            if class_name not in API_MODULES:
                raise BfclDataError(f"entry {entry.id}: unknown API class {class_name!r}")
            instance = _api_class(class_name)()
            if class_name not in STATELESS:
                instance._load_scenario(
                    copy.deepcopy(entry.initial_config.get(class_name, {})), long_context=entry.long_context
                )
            self.instances[class_name] = instance
            for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.owner[name] = class_name

    def method(self, name: str) -> Any:
        return getattr(self.instances[self.owner[name]], name)

    def execute(self, c: ToolCall) -> str:
        """Run one call; the result (or the error) as the benchmark's executor renders it."""
        if c.name in REFUSED_NAMES:
            return f"Error during execution: Function call {c.name} is not allowed."
        if c.name not in self.owner:
            return f"Error during execution: name '{c.name}' is not defined"
        try:
            return _format_result(self.method(c.name)(**c.arguments))
        except Exception as exc:  # the benchmark reports any failure of a call as its result
            return f"Error during execution: {exc}"

    def to_tool_call(self, text: str) -> ToolCall:
        """A ground-truth call string as a keyword tool call (positionals named by signature)."""
        name, args, kwargs = parse_call(text)
        if args:
            if name not in self.owner:
                raise BfclDataError(f"ground-truth call {text!r} names no known function")
            params = [p for p in inspect.signature(self.method(name)).parameters.values()]
            for p, v in zip(params, args, strict=False):
                kwargs[p.name] = v
        return ToolCall(name, kwargs)

    def public_state(self, class_name: str) -> dict[str, Any]:
        return {k: v for k, v in vars(self.instances[class_name]).items() if not k.startswith("_")}
