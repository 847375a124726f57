"""What environment code can reach, walked: no path from the names it is given to the real
interpreter, by the edges the guard lets it follow.

A fresh interpreter is set up exactly as a guarded worker is (the allow-listed modules
pre-imported, the module wrappers and builtins built, :func:`spade_sandbox.guard.disarm`
applied, an environment compiled with :func:`~spade_sandbox.guard.compile_guarded` and
executed under the guard's builtins). From the environment's names — its builtins, the
wrapper every allowed module of every domain hands out on import, the environment's own
class, instance, methods and an exception it caught — the walk follows, breadth first to a
bounded depth, every edge the guard allows: an attribute whose name
:func:`~spade_sandbox.allowlist.attribute_allowed` accepts (read as the guard reads it, so
``str.format`` is the checked one), the items of containers, and ``type(x)``. No object on
the way may be one of the dangerous ones: a real module (anything but a guard wrapper), a
module's namespace (function globals), the real builtins or ``eval``/``exec``/``compile``/
``__import__``/``open``..., a frame, code object or traceback, the guard's own internals,
or a string-driven walker the guard replaces or leaves out (unchecked ``str.format``,
``operator.attrgetter``, ``string.Formatter``, the originals ``disarm`` replaced).

The same walk with every attribute name allowed must find them (the control: the walk and
its detector work), and must visit a good share of the allowed modules' objects.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: The walk itself, run as a script in a fresh interpreter.
_WALK = Path(__file__).with_name("guard_walk.py")


def _walk(extra: list[str], depth: int, mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(_WALK), json.dumps(extra), str(depth), mode],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _domain_modules() -> list[str]:
    from spade_core.plugins import get_plugins

    return sorted({m for d in get_plugins().domains().values() for m in d.allowed_modules})


@pytest.fixture(scope="module")
def domain_modules() -> list[str]:
    modules = _domain_modules()
    assert "spade_tooluse.base" in modules  # the walk covers the domains' helper modules too
    return modules


def test_nothing_dangerous_is_reachable_through_what_the_guard_allows(domain_modules: list[str]):
    result = _walk(domain_modules, 3, "guarded")
    assert result["count"] == 0, "\n".join(result["found"])
    # The walk really went through the allowed modules' objects, down to the checked format.
    assert result["visited"] > 100_000, result
    assert result["checked_format_reached"] and result["get_type_hints_reached"], result


def test_control_the_same_walk_without_the_attribute_rule_finds_the_escapes():
    result = _walk([], 2, "control")
    found = "\n".join(result["found"])
    assert result["count"] > 0
    for needle in ("the namespace of module builtins", "the namespace of module spade_sandbox.guard", "a frame", "a traceback", "the real module"):
        assert needle in found, found
