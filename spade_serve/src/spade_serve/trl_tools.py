"""Tool-use schemas as Python signatures: :func:`tool_use_class` turns an environment's
OpenAI-format tool schemas into a TRL environment class with one method per tool, whose
signature, type hints and Google-style docstring transformers' ``get_json_schema`` reads
back into the schema the model is shown."""

from __future__ import annotations

import inspect
import json
import keyword
from collections.abc import Callable, Mapping, Sequence
from types import GenericAlias
from typing import Any, Literal, Union

from .trl_episode import SpadeEnvironment, ToolUseEnvironment, TrlEnvError

#: Names a tool cannot take: TRL calls ``reset`` and ``get_reward`` itself (never as tools),
#: and ``answer`` is the tool the adapter gives every tool-use environment. Every other public
#: name of the adapter's classes is a read-only property a tool may replace.
RESERVED_TOOL_NAMES = {"reset": "is called by TRL itself", "get_reward": "is called by TRL itself",
             "answer": "is the adapter's own tool for replying to the user"}

_JSON_TO_PY: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "null": type(None),
}


def _py_type(schema: Mapping[str, Any]) -> Any:
    """The type hint whose JSON schema (as transformers writes it) is closest to ``schema``:
    enums as ``Literal``, arrays with their item type, unions of types; nested object
    properties and other keywords are not expressible and are dropped."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str | int | float | bool) or v is None for v in enum):
        return Literal[tuple(enum)]
    kind = schema.get("type")
    if isinstance(kind, list):
        members = [_py_type({**schema, "type": k}) for k in kind if isinstance(k, str)]
        if not members:
            return Any
        return members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007 (built from a list)
    if kind == "array":
        items = schema.get("items")
        return GenericAlias(list, (_py_type(items),)) if isinstance(items, Mapping) and items.get("type") else list
    return _JSON_TO_PY.get(kind, Any) if isinstance(kind, str) else Any


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _tool_method(env_id: str, schema: Mapping[str, Any]) -> tuple[str, Callable[..., str], tuple[str, ...], tuple[str, ...]]:
    """A method for one OpenAI-format tool schema: named after the tool, with a signature,
    type hints and a Google-style docstring from which transformers' ``get_json_schema``
    rebuilds the schema the model is shown."""
    fn_schema = schema.get("function", schema) if isinstance(schema, Mapping) else None
    if not isinstance(fn_schema, Mapping) or not isinstance(fn_schema.get("name"), str):
        raise TrlEnvError(f"{env_id}: a tool schema has no function name: {json.dumps(schema, default=str)[:200]}")
    name = fn_schema["name"]
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name in RESERVED_TOOL_NAMES:
        why = f"is reserved ({RESERVED_TOOL_NAMES[name]})" if name in RESERVED_TOOL_NAMES else "is not a Python identifier TRL can call"
        raise TrlEnvError(f"{env_id}: tool {name!r} {why}; this environment cannot be offered to TRL")
    parameters = fn_schema.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = [r for r in parameters.get("required") or [] if r in properties]
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints: dict[str, Any] = {}
    arg_lines = []
    for pname, pschema in properties.items():
        if not isinstance(pname, str) or not pname.isidentifier() or keyword.iskeyword(pname):
            raise TrlEnvError(
                f"{env_id}: tool {name!r} has a parameter {pname!r} that is not a Python identifier, "
                "which TRL cannot pass as a keyword; this environment cannot be offered to TRL"
            )
        pschema = pschema if isinstance(pschema, Mapping) else {}
        hints[pname] = _py_type(pschema)
        default = inspect.Parameter.empty if pname in required else None
        params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[pname]))
        desc = _one_line(pschema.get("description") or f"The {pname} argument.")
        arg_lines.append(f"    {pname}: {desc}")
    hints["return"] = str
    description = _one_line(fn_schema.get("description") or f"The {name} tool.")
    doc = description
    if arg_lines:
        doc += "\n\nArgs:\n" + "\n".join(arg_lines)
    doc += "\n\nReturns:\n    What the environment answers."

    def tool(self: ToolUseEnvironment, **arguments: Any) -> str:
        return self._call_tool(name, arguments)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = doc
    tool.__annotations__ = hints
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    names = tuple(p.name for p in params[1:])
    return name, tool, names, tuple(required)


def tool_use_class(env_id: str, schemas: Sequence[Mapping[str, Any]]) -> type[SpadeEnvironment]:
    """The TRL environment class of one tool-use environment: its tools as methods, plus
    ``answer``. Raises :class:`TrlEnvError` for a tool TRL could not call."""
    namespace: dict[str, Any] = {"__module__": __name__, "__doc__": f"The tool-use environment {env_id} for TRL."}
    signatures: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for schema in schemas:
        name, method, names, required = _tool_method(env_id, schema)
        if name in signatures:
            raise TrlEnvError(f"{env_id}: two tools are named {name!r}")
        namespace[name] = method
        signatures[name] = (names, required)
    namespace["_signatures"] = signatures
    words = "".join(c if c.isalnum() else " " for c in env_id).split()
    class_name = "".join(w[:1].upper() + w[1:] for w in words) + "Environment"
    return type(class_name if class_name.isidentifier() else "ToolUseEnvironment", (ToolUseEnvironment,), namespace)


__all__ = ["RESERVED_TOOL_NAMES", "tool_use_class"]
