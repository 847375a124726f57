"""Package attributes imported on first access (PEP 562), so a package's ``__init__``
stays cheap to import while its public names stay where users expect them."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_attributes(package: str, where: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps each public name to the
    relative module that defines it; a name is imported on first access and then kept in
    ``namespace`` (the package's ``globals()``), so later lookups are plain ones."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
