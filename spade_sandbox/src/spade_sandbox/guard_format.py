"""The runtime guard's check of ``str.format`` and ``str.format_map``: a format field may
not walk to an attribute untrusted code may not read (``"{0.__class__}"`` built at run
time, which the static layer cannot see). Environment code reaches the two methods only
through :func:`checked_format` and :func:`checked_format_map`: :mod:`spade_sandbox.guard`
rewrites every ``.format``/``.format_map`` attribute read of its source into a call of
:func:`format_attribute`, and its ``getattr`` hands out :func:`checked_attribute`.

Imported by the zygote and workers: standard library only.
"""

from __future__ import annotations

import _string
from typing import Any

from .allowlist import attribute_allowed

#: The builtin through which rewritten ``.format``/``.format_map`` reads go.
FORMAT_ATTRIBUTE_GUARD = "__spade_format_attribute__"
FORMAT_METHODS = frozenset({"format", "format_map"})


_STR_FORMAT = str.format


_STR_FORMAT_MAP = str.format_map


_BUILTIN_METHOD = type("".format)


def check_format_string(fmt: str, depth: int = 0) -> None:
    """Raise :class:`AttributeError` if a replacement field of ``fmt`` (or of a nested
    field inside a format spec) reads an attribute that untrusted code may not read.
    Malformed strings pass: ``str.format`` itself reports them."""
    try:
        fields = list(_string.formatter_parser(fmt))
    except ValueError:
        return
    for _literal, field, spec, _conversion in fields:
        if field:
            try:
                _first, rest = _string.formatter_field_name_split(field)
                parts = list(rest)
            except ValueError:
                parts = []
            for is_attribute, key in parts:
                if is_attribute and not attribute_allowed(str(key)):
                    raise AttributeError(f"format field {field!r} reaches attribute {key!r}, which is not accessible in the sandbox")
        if spec and "{" in spec and depth < 2:
            check_format_string(spec, depth + 1)


def checked_format(fmt: str, /, *args: Any, **kwargs: Any) -> str:
    """``str.format`` after :func:`check_format_string`."""
    if isinstance(fmt, str):
        check_format_string(fmt)
    return _STR_FORMAT(fmt, *args, **kwargs)


def checked_format_map(fmt: str, mapping: Any, /) -> str:
    """``str.format_map`` after :func:`check_format_string`."""
    if isinstance(fmt, str):
        check_format_string(fmt)
    return _STR_FORMAT_MAP(fmt, mapping)


def _bound(method: Any, fmt: str) -> Any:
    def bound(*args: Any, **kwargs: Any) -> str:
        return method(fmt, *args, **kwargs)

    bound.__name__ = method.__name__.replace("checked_", "")
    return bound


def checked_attribute(value: Any) -> Any:
    """``value`` itself, unless it is ``str.format``/``str.format_map`` (unbound, or bound
    to a string): then the checked equivalent."""
    if value is _STR_FORMAT:
        return checked_format
    if value is _STR_FORMAT_MAP:
        return checked_format_map
    if type(value) is _BUILTIN_METHOD and value.__name__ in FORMAT_METHODS:
        owner = value.__self__  # type: ignore[attr-defined]  # a builtin method's receiver
        if isinstance(owner, str):
            method = checked_format if value.__name__ == "format" else checked_format_map
            if getattr(type(owner), value.__name__, None) in (_STR_FORMAT, _STR_FORMAT_MAP):
                return _bound(method, owner)
    return value


def format_attribute(obj: Any, name: str) -> Any:
    """What ``obj.format`` / ``obj.format_map`` evaluates to in environment code."""
    return checked_attribute(getattr(obj, name))
