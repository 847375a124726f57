"""What the tau2 adapter's modules share: its errors, the OpenAI-format declarations of
tools and the check of a call's arguments against them, the tools every domain has in the
same form, and the merge of initial data into a database."""

from __future__ import annotations

import ast
import copy
import math
import operator
from collections.abc import Callable
from typing import Any

from spade_core.answers import finite_number

from ..dialogue import BenchmarkDataError


class Tau2DataError(BenchmarkDataError):
    """A tau2-bench file not in the published format."""


class NotImplementedInAdapter(NotImplementedError):
    """What the task needs and this adapter does not implement (named in the message)."""


_OPS: dict[type, Callable[..., Any]] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                                        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
                                        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _arithmetic(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _arithmetic(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arithmetic(node.operand))
    raise ValueError("Invalid expression")


class SharedTools:
    """The tools every domain of the benchmark has in the same form."""

    def calculate(self, expression: str) -> str:
        if not all(ch in "0123456789+-*/(). " for ch in expression):
            raise ValueError("Invalid characters in expression")
        try:
            value = _arithmetic(ast.parse(expression, mode="eval"))
        except (SyntaxError, ZeroDivisionError, OverflowError) as exc:
            raise ValueError(f"Invalid expression: {exc}") from None
        return str(round(value, 2))

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"


def declare(name: str, description: str, *, optional: tuple[str, ...] = (),
            **params: tuple[str | dict[str, Any], str]) -> dict[str, Any]:
    """An OpenAI-format declaration; a parameter's kind is a JSON type name, ``array`` (of
    strings) or a JSON schema of its own; every parameter is required but those named in
    ``optional``."""
    props: dict[str, Any] = {}
    for key, (kind, text) in params.items():
        key = key.rstrip("_")
        if isinstance(kind, dict):
            props[key] = {**kind, "description": text}
        else:
            props[key] = {"type": "array", "items": {"type": "string"}, "description": text} if kind == "array" \
                else {"type": kind, "description": text}
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": props,
                                                            "required": [k for k in props if k not in optional]}}}


#: JSON type names, the kinds of most declared parameters.
STRING, INTEGER = "string", "integer"


def _lax_int(value: Any, where: str) -> int:
    """An integer argument as the benchmark's argument models take one (pydantic's lax mode):
    an int or bool, a float without a fractional part, or a string holding such a number."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{where}: must be an integer, got {value!r}") from None
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        raise ValueError(f"{where}: must be an integer, got {value!r} (a fractional or non-finite number)")
    raise ValueError(f"{where}: must be an integer, got {type(value).__name__}")


def _lax_float(value: Any, where: str) -> float:
    """A number argument as the benchmark's argument models take one: an int, a float or a
    string holding a number (booleans are not numbers here); finite only
    (:func:`spade_core.answers.finite_number`), so no ``nan`` amount reaches a database
    that the scoring compares."""
    number = finite_number(value)
    if number is None:
        raise ValueError(f"{where}: must be a number, got {str(value)[:60]!r} (finite: nan and the infinities are "
                         "not numbers here)")
    return number


_TRUE, _FALSE = {"true", "1", "yes", "on", "t", "y"}, {"false", "0", "no", "off", "f", "n"}


def _lax_bool(value: Any, where: str) -> bool:
    """A boolean argument taken leniently (``true``/``false``, ``1``/``0``, ``"yes"``/``"no"``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{where}: must be a boolean, got {value!r}")


def conform(schema: dict[str, Any], value: Any, where: str) -> Any:
    """``value`` checked against a declaration's parameter schema and converted as the
    benchmark's argument models convert it: integers, numbers and booleans leniently,
    strings and enumerations strictly, ``null`` where the type lists it, objects reduced to
    their declared fields (others ignored, or refused where ``additionalProperties`` is
    false; an object without declared fields passed whole), a missing required field an
    error. Raises :class:`ValueError` naming the argument."""
    kind = schema.get("type")
    if isinstance(kind, list):  # e.g. ["string", "null"]
        if value is None and "null" in kind:
            return None
        kind = next((k for k in kind if k != "null"), None)
    if "enum" in schema:
        if not isinstance(value, str) or value not in schema["enum"]:
            raise ValueError(f"{where}: must be one of {', '.join(map(repr, schema['enum']))}, got {value!r}")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError(f"{where}: must be a string, got {type(value).__name__}")
        return value
    if kind == "integer":
        return _lax_int(value, where)
    if kind == "number":
        return _lax_float(value, where)
    if kind == "boolean":
        return _lax_bool(value, where)
    if kind == "array":
        if not isinstance(value, list):
            raise ValueError(f"{where}: must be an array, got {type(value).__name__}")
        return [conform(schema.get("items", {}), v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "object":
        if not isinstance(value, dict):
            raise ValueError(f"{where}: must be an object, got {type(value).__name__}")
        if "properties" not in schema:
            return dict(value)
        out: dict[str, Any] = {}
        for key, sub in schema["properties"].items():
            if key in value:
                out[key] = conform(sub, value[key], f"{where}.{key}" if where else key)
            elif key in schema.get("required", ()):
                raise ValueError(f"{where + '.' if where else ''}{key}: field required")
        if schema.get("additionalProperties") is False:
            extra = sorted(k for k in value if k not in schema["properties"])
            if extra:
                raise ValueError(f"{where + '.' if where else ''}{extra[0]}: extra fields not permitted")
        return out
    return value


def deep_update(target: dict[str, Any], update: dict[str, Any]) -> None:
    """Merge ``update`` into ``target``: objects field by field, anything else replaced by a copy."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
