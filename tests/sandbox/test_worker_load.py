"""What a worker does to load its environment, and what the pool and the zygote do for it
ahead of time so that each worker writes fewer pages of its own: the pool compiles a source
as the guard would (the worker runs that code and no compiler), and the zygote disarms the
library once before it forks (every guarded worker runs disarmed; one started without the
guard sees the library as it is)."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from spade_sandbox.errors import EnvCodeError
from spade_sandbox.guard import compile_guarded

from spade_sandbox import SandboxPool, backends

PLAIN = '''
class AnswerEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return "compiled from the source", 0.0, True, False, {}
'''


def spec(source: str, guarded: bool = True) -> dict[str, Any]:
    return {"source": source, "class_name": "AnswerEnv", "guarded": guarded}


#: A source the guard rewrites (its ``.format`` read goes through the checked format).
REWRITTEN = PLAIN.replace('"compiled from the source"', '"{}".format("rewritten")')
#: One the guard refuses at its compile step.
REFUSED = PLAIN.replace('"compiled from the source"', "self.__class__")
#: A chain the parser takes but whose tree converts back to code only with the recursion
#: headroom the worker gives it (the recursion limit is process-wide: the pool leaves it).
DEEP = REWRITTEN + "\nTOTAL = " + " + ".join(["1"] * (sys.getrecursionlimit() * 3 // 2)) + "\n"


@pytest.mark.parametrize("source", [PLAIN, REWRITTEN], ids=["plain", "rewritten"])
def test_the_pool_compiles_a_source_exactly_as_the_guard_would(source: str) -> None:
    sent = backends.with_compiled_code(spec(source))
    assert sent["code_python"] == sys.hexversion
    assert marshal.loads(sent["code"]) == compile_guarded(source, "<env>")


def test_the_pool_compiles_deep_sources_without_moving_the_recursion_limit() -> None:
    limit = sys.getrecursionlimit()
    assert backends.with_compiled_code(spec(DEEP)) == spec(DEEP)
    assert sys.getrecursionlimit() == limit
    assert compile_guarded(DEEP, "<env>") is not None  # what the worker then does


@pytest.mark.parametrize(
    "source, guarded",
    [
        (PLAIN, False),  # no guard: the worker compiles with the real builtins' defaults
        (REFUSED, True),  # the worker refuses it again and says why
        (PLAIN + "#" * backends.MAX_POOL_COMPILE_CHARS, True),  # the worker compiles it on its own CPU budget
        (PLAIN.replace("return", "retrun", 1), True),  # does not compile: the worker reports why
        (PLAIN + "\0", True),  # null bytes (ValueError)
    ],
    ids=["unguarded", "guard-refuses", "too-large", "syntax-error", "null-byte"],
)
def test_the_pool_leaves_every_other_source_for_the_worker_to_compile(source: str, guarded: bool) -> None:
    assert backends.with_compiled_code(spec(source, guarded)) == spec(source, guarded)


def test_the_code_the_pool_compiles_keeps_asserts_under_python_dash_o() -> None:
    """The worker's interpreter never runs with -O; the pool's may."""
    script = textwrap.dedent(
        """
        import json, marshal
        from spade_sandbox.backends import with_compiled_code
        sent = with_compiled_code({"source": "assert False, 'kept'", "guarded": True})
        try:
            exec(marshal.loads(sent["code"]), {})
            print(json.dumps("stripped"))
        except AssertionError as exc:
            print(json.dumps(str(exc)))
        """
    )
    out = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == "kept"


def _sending_other_code(monkeypatch: pytest.MonkeyPatch, other: str, python: int = sys.hexversion) -> None:
    """Make the pool send the code of ``other`` (marked as compiled by ``python``) with the
    source it was asked to run."""
    real = backends.with_compiled_code

    def with_other_code(worker_spec: dict[str, Any]) -> dict[str, Any]:
        sent = real({**worker_spec, "source": other})
        assert "code" in sent
        return {**sent, "source": worker_spec["source"], "code_python": python}

    monkeypatch.setattr(backends, "with_compiled_code", with_other_code)


def test_a_worker_runs_the_code_the_pool_sent_without_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    _sending_other_code(monkeypatch, PLAIN.replace("compiled from the source", "sent by the pool"))
    with SandboxPool() as pool:
        h = pool.spawn(PLAIN)
        assert pool.step(h, "go")[0] == "sent by the pool"


def test_a_rewritten_source_the_pool_compiled_runs_in_the_worker_with_the_checked_format() -> None:
    with SandboxPool() as pool:
        assert pool.step(pool.spawn(REWRITTEN), "go")[0] == "rewritten"
        fields = PLAIN.replace('"compiled from the source"', '("{0." + "_" * 2 + "class" + "_" * 2 + "}").format(1)')
        with pytest.raises(EnvCodeError, match="format field .* is not accessible in the sandbox"):
            pool.step(pool.spawn(fields), "go")


def test_a_worker_compiles_the_source_when_the_code_is_of_another_python(monkeypatch: pytest.MonkeyPatch) -> None:
    _sending_other_code(monkeypatch, PLAIN.replace("compiled from the source", "sent by the pool"), sys.hexversion + 1)
    with SandboxPool() as pool:
        h = pool.spawn(PLAIN)
        assert pool.step(h, "go")[0] == "compiled from the source"


#: A helper module that evaluates annotations in its own namespace at import: what the
#: disarmed ``typing`` refuses (it evaluates only in the environment's namespace).
HELPER = '''
import typing


class Point:
    x: "int"
    y: "int"


HINTS = sorted(typing.get_type_hints(Point))
'''

USES_HELPER = '''
import collections
import spade_hints_helper


class HintsEnv:
    def reset(self, seed=None):
        return ",".join(spade_hints_helper.HINTS), {}

    def step(self, action):
        u = "_" * 2
        try:
            collections.UserString("{0." + u + "class" + u + "}").format(1)
        except AttributeError:
            return "disarmed", 0.0, True, False, {}
        return "the library as it is", 0.0, True, False, {}
'''


def test_the_zygote_imports_helpers_with_the_library_as_it_is_and_forks_disarmed_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "spade_hints_helper.py").write_text(HELPER)
    # The zygote started below gets this path (the head of sys.path is the script's, left out).
    monkeypatch.setattr(sys, "path", [*sys.path[:1], str(tmp_path), *sys.path[1:]])
    with SandboxPool() as pool:
        h = pool.spawn(USES_HELPER, allowed_modules=["spade_hints_helper"])
        assert pool.reset(h, seed=0)[0] == "x,y"
        assert pool.step(h, "go")[0] == "disarmed"
        # A worker forked after the import (the spare) runs disarmed too.
        again = pool.spawn(USES_HELPER + "\n# another code version\n", allowed_modules=["spade_hints_helper"])
        assert pool.worker_of(again).pid != pool.worker_of(h).pid
        assert pool.step(again, "go")[0] == "disarmed"
