"""The declaration checker of tool-use environments: a class's ``tools`` schemas against its
``tool_*`` methods (when the class is created), and a call's arguments against a schema
(at every call).

Changes with the subset of JSON Schema and OpenAI's tool format that environments may
declare, not with how episodes are graded. Standard library and ``spade_core``'s errors
only (loaded in the sandbox with :mod:`spade_tooluse.base`).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from spade_core.errors import SpadeError

#: JSON-Schema type names a tool parameter may declare.
JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})


class ToolSchemaError(SpadeError, TypeError):
    """A tool-use environment class whose schemas and ``tool_*`` methods disagree.

    ``problems`` lists every mismatch found, each naming the class and the tool.
    """

    def __init__(self, class_name: str, problems: list[str]) -> None:
        super().__init__(f"{class_name}: invalid tool declarations: " + "; ".join(problems))
        self.class_name = class_name
        self.problems = list(problems)


def function_schema(
    name: str, description: str, properties: dict[str, dict[str, Any]] | None = None,
    required: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Build one OpenAI-format tool schema (a convenience for writing ``tools``)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": dict(properties or {}), "required": list(required)},
        },
    }


def _normalise_schema(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The OpenAI-format form of one declared schema (a flat ``{"name", ...}`` form is
    accepted too), or an error message."""
    if not isinstance(raw, dict):
        return None, f"schema {raw!r} is not a dict"
    fn = raw.get("function") if raw.get("type") == "function" else raw
    if not isinstance(fn, dict):
        return None, f"schema {raw!r} has no 'function' object"
    name = fn.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        return None, f"schema has no valid 'name' (got {name!r})"
    params = fn.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, dict) or params.get("type", "object") != "object":
        return None, f"tool {name!r}: 'parameters' must be a JSON-Schema object"
    props = params.get("properties", {})
    required = params.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list):
        return None, f"tool {name!r}: 'properties' must be an object and 'required' a list"
    description = fn.get("description", "")
    if not isinstance(description, str):
        return None, f"tool {name!r}: 'description' must be a string"
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": copy.deepcopy(props), "required": list(required)},
        },
    }, None


def _declared_types(prop: Any) -> list[str] | None:
    if not isinstance(prop, dict):
        return None
    t = prop.get("type")
    if t is None:
        return []  # untyped: anything goes
    types = [t] if isinstance(t, str) else t
    if not isinstance(types, list) or not all(isinstance(x, str) for x in types):
        return None
    return types


def check_tool_declarations(cls: type) -> list[dict[str, Any]]:
    """Check ``cls.tools`` against its ``tool_*`` methods; return the normalised schemas.

    Raises :class:`ToolSchemaError` listing every problem: malformed schemas, duplicate
    names, schemas without a method, methods without a schema, parameters missing from
    either side, ``**kwargs``/``*args``, required-ness that disagrees with defaults, and
    unknown JSON-Schema types.
    """
    problems: list[str] = []
    declared = getattr(cls, "tools", None)
    if not isinstance(declared, (list, tuple)):
        raise ToolSchemaError(cls.__name__, ["'tools' must be a list of tool schemas"])
    schemas: list[dict[str, Any]] = []
    seen: set[str] = set()
    for raw in declared:
        schema, err = _normalise_schema(raw)
        if err is not None or schema is None:
            problems.append(err or "invalid schema")
            continue
        name = schema["function"]["name"]
        if name in seen:
            problems.append(f"tool {name!r} declared twice")
            continue
        seen.add(name)
        schemas.append(schema)
    methods = {
        attr[len("tool_"):]: getattr(cls, attr)
        for attr in dir(cls)
        if attr.startswith("tool_") and callable(getattr(cls, attr))
    }
    for name in sorted(set(methods) - seen):
        problems.append(f"method tool_{name} has no schema in 'tools'")
    for schema in schemas:
        fn = schema["function"]
        name = fn["name"]
        method = methods.get(name)
        if method is None:
            problems.append(f"tool {name!r} has no method tool_{name}")
            continue
        props: dict[str, Any] = fn["parameters"]["properties"]
        required = fn["parameters"]["required"]
        for r in required:
            if r not in props:
                problems.append(f"tool {name!r}: required parameter {r!r} is not in 'properties'")
        for pname, prop in props.items():
            types = _declared_types(prop)
            if types is None:
                problems.append(f"tool {name!r}: parameter {pname!r} has an invalid schema")
            elif any(t not in JSON_TYPES for t in types):
                problems.append(
                    f"tool {name!r}: parameter {pname!r} has unknown type {prop.get('type')!r} "
                    f"(use one of {sorted(JSON_TYPES)})"
                )
        try:
            params = list(inspect.signature(method).parameters.values())[1:]  # drop self
        except (TypeError, ValueError):
            problems.append(f"tool_{name} has no inspectable signature")
            continue
        sig_names = set()
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                problems.append(f"tool_{name}: *args/**kwargs are not allowed; declare each parameter")
                continue
            sig_names.add(p.name)
            if p.name not in props:
                problems.append(f"tool {name!r}: method parameter {p.name!r} is missing from the schema")
                continue
            has_default = p.default is not p.empty
            if has_default and p.name in required:
                problems.append(f"tool {name!r}: parameter {p.name!r} has a default but is listed as required")
            if not has_default and p.name not in required:
                problems.append(f"tool {name!r}: parameter {p.name!r} has no default but is not listed as required")
        for pname in props:
            if pname not in sig_names:
                problems.append(f"tool {name!r}: schema parameter {pname!r} is not a parameter of tool_{name}")
    if problems:
        raise ToolSchemaError(cls.__name__, problems)
    return schemas


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, types: list[str]) -> bool:
    if not types:
        return True
    for t in types:
        py = _PY_TYPES[t]
        if isinstance(value, bool) and t in ("integer", "number"):
            continue  # JSON true is not a number
        if t == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, py):
            return True
    return False


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not fit ``schema`` (a readable message), or ``None`` if they do."""
    fn = schema["function"]
    props = fn["parameters"]["properties"]
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)} for tool {fn['name']!r} (accepted: {', '.join(props) or 'none'})"
    missing = [r for r in fn["parameters"]["required"] if r not in arguments]
    if missing:
        return f"missing required argument(s) {', '.join(missing)} for tool {fn['name']!r}"
    for k, v in arguments.items():
        types = _declared_types(props[k]) or []
        if not _type_ok(v, types):
            return f"argument {k!r} of tool {fn['name']!r} must be {' or '.join(types)}, got {type(v).__name__}"
        enum = props[k].get("enum") if isinstance(props[k], dict) else None
        if isinstance(enum, list) and v not in enum:
            return f"argument {k!r} of tool {fn['name']!r} must be one of {enum}"
    return None
