"""The static layer accepts the idioms generated environments use and rejects escapes
with a readable, located finding."""

from __future__ import annotations

import pytest
from envsrc import COUNTER
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_sandbox.allowlist import DEFAULT_ALLOWED_MODULES, SAFE_DUNDER_ATTRIBUTES

from spade_sandbox import check_source


def rules(source: str, **kw) -> set[str]:
    return {f.rule for f in check_source(source, **kw).findings}


def with_env(snippet: str) -> str:
    return snippet + "\n\nclass XEnv:\n    def reset(self, seed=None):\n        return 'a', {}\n    def step(self, a):\n        return 'a', 0.0, True, False, {}\n"


def test_accepts_a_typical_generated_environment():
    report = check_source(COUNTER)
    assert report.ok, report.summary()
    assert report.class_name == "CounterEnv"
    assert report.findings == []


@pytest.mark.parametrize(
    "snippet",
    [
        "import json, math, re, itertools, string, collections, heapq",
        "from collections import defaultdict, Counter, deque",
        "import collections.abc",
        "from typing import Any, Optional, List",
        "from enum import Enum",
        "import hashlib",
        "from fractions import Fraction",
        "x = type(object()).__name__",
        "class A:\n    def __repr__(self):\n        return 'A'\n    def __eq__(self, o):\n        return True",
        "s = '{0} and {1!r}'.format(1, 2)",
        "v = getattr(object(), 'real', None)",
    ],
)
def test_accepts_common_idioms(snippet: str):
    report = check_source(with_env(snippet))
    assert report.ok, report.summary()


@pytest.mark.parametrize(
    ("snippet", "rule", "needle"),
    [
        ("import os", "import", "'os'"),
        ("import subprocess", "import", "'subprocess'"),
        ("from socket import socket", "import", "'socket'"),
        ("import ctypes", "import", "'ctypes'"),
        ("from . import sibling", "import", "relative"),
        ("from random import _os", "import", "private"),
        ("f = open('/etc/passwd')", "builtin", "'open'"),
        ("eval('1')", "builtin", "'eval'"),
        ("exec('x = 1')", "builtin", "'exec'"),
        ("__import__('os')", "builtin", "'__import__'"),
        ("c = compile('1', 'f', 'eval')", "builtin", "'compile'"),
        ("g = globals()", "builtin", "'globals'"),
        ("v = vars()", "builtin", "'vars'"),
        ("x = ().__class__.__bases__[0].__subclasses__()", "dunder", "'__class__'"),
        ("x = (lambda: 0).__globals__", "dunder", "'__globals__'"),
        ("x = (lambda: 0).__code__", "dunder", "'__code__'"),
        ("b = __builtins__", "dunder", "'__builtins__'"),
        ("d = object().__dict__", "dunder", "'__dict__'"),
        ("def g():\n    yield 1\nf = g().gi_frame.f_back", "frame", "'gi_frame'"),
        ("t = None\nt.tb_frame", "frame", "'tb_frame'"),
        ("m = int.mro()", "frame", "'mro'"),
        ("getattr(object(), 'x' + 'y')", "dynamic-attribute", "computed"),
        ("getattr(object(), '__class__')", "dunder", "'__class__'"),
        ("s = '{0.__class__}'.format(1)", "format", "format"),
        ("class A:\n    def __getattribute__(self, n):\n        return 1", "dunder", "'__getattribute__'"),
        ("class A:\n    def __reduce__(self):\n        return 1", "dunder", "'__reduce__'"),
        ("class M(type):\n    pass\nclass A(metaclass=M):\n    pass", "dunder", "metaclass"),
    ],
)
def test_rejects_escapes_with_a_located_message(snippet: str, rule: str, needle: str):
    report = check_source(with_env(snippet))
    assert not report.ok
    matching = [f for f in report.findings if f.rule == rule]
    assert matching, report.summary()
    assert any(needle in f.message for f in matching), report.summary()
    assert all(f.line >= 1 for f in matching)


def test_reports_every_finding_not_just_the_first():
    report = check_source(with_env("import os\nimport socket\neval('1')"))
    assert [f.line for f in report.findings] == [1, 2, 3]


def test_domain_modules_extend_the_allow_list():
    src = with_env("from spade_tooluse.base import ToolEnv")
    assert "import" in rules(src)
    assert check_source(src, allowed_modules=["spade_tooluse.base"]).ok
    assert check_source(with_env("import spade_tooluse.base.x"), allowed_modules=["spade_tooluse.*"]).ok


def test_syntax_error_and_missing_env_class_are_findings():
    bad = check_source("def f(:\n")
    assert not bad.ok and bad.findings[0].rule == "syntax" and bad.findings[0].line == 1
    assert rules("x = 1\n") == {"env-class"}
    assert check_source("x = 1\n").class_name is None


def test_oversized_source_is_rejected_before_parsing():
    assert rules("#" * 600_000) == {"size"}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_check_source_never_raises_on_any_text(text: str):
    report = check_source(text)
    assert report.ok == (not report.findings)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"__[a-z][a-z_]{0,12}[a-z]__", fullmatch=True))
def test_every_dunder_attribute_outside_the_safe_set_is_rejected(name: str):
    report = check_source(with_env(f"x = object().{name}"))
    assert report.ok == (name in SAFE_DUNDER_ATTRIBUTES)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True))
def test_imports_pass_exactly_when_allow_listed(module: str):
    report = check_source(with_env(f"import {module}"))
    assert report.ok == (module in DEFAULT_ALLOWED_MODULES)


@pytest.mark.parametrize(
    ("snippet", "rule", "needle"),
    [
        ("match 1:\n    case object(__globals__=g):\n        pass", "dunder", "'__globals__' (named in a match class pattern)"),
        ("match 1:\n    case BaseException(__traceback__=t):\n        pass", "dunder", "'__traceback__'"),
        ("match 1:\n    case object(gi_frame=f):\n        pass", "frame", "'gi_frame'"),
        ("match {}:\n    case {'k': 1, **__builtins__}:\n        pass", "dunder", "'__builtins__'"),
        ("match []:\n    case [*__all__]:\n        pass", "dunder", "'__all__'"),
        ("match 1:\n    case int() as __spec__:\n        pass", "dunder", "'__spec__'"),
        ("def f(x: '().__class__.__base__'):\n    pass", "dunder", "'__class__'"),
        ("def f() -> 'List[\"open\"]':\n    pass", "builtin", "'open'"),
        ("x: '__import__(\"os\")' = 1", "builtin", "'__import__'"),
        ("import typing\nr = typing.ForwardRef('[].__class__')", "dunder", "'__class__'"),
        ("import enum\nE = enum.Enum._convert_('E', 'posix', bool)", "dunder", "'_convert_'"),
        ("import typing\nr = typing.ForwardRef('int')._evaluate({}, {}, frozenset())", "dunder", "'_evaluate'"),
    ],
)
def test_attributes_named_outside_attribute_syntax_are_checked(snippet: str, rule: str, needle: str):
    """Match class patterns, match captures, string annotations and ForwardRef arguments
    name attributes and code without an ``obj.attr`` node; each is checked like one."""
    report = check_source(with_env(snippet))
    assert any(f.rule == rule and needle in f.message for f in report.findings), report.summary()


def test_ordinary_match_statements_and_string_annotations_pass():
    snippet = (
        "from typing import List, Optional\n"
        "def f(x: 'Optional[int]') -> 'List[str]':\n"
        "    match x:\n"
        "        case int(real=r) if r > 0:\n"
        "            return [str(r)]\n"
        "        case {'k': v, **rest}:\n"
        "            return [v]\n"
        "        case [first, *others] as whole:\n"
        "            return others\n"
        "    return []\n"
    )
    report = check_source(with_env(snippet))
    assert report.ok, report.summary()


@pytest.mark.parametrize("terms", [999, 1500, 2500])
def test_a_long_but_valid_expression_passes(terms: int):
    """CPython compiles a chain of a few thousand operands from source; so does the static
    layer (it used to compile the tree, which CPython refuses at a third of that depth)."""
    src = with_env("a = 1\nx = " + " + ".join(["a"] * terms))
    compile(src, "<t>", "exec")
    assert check_source(src).ok, check_source(src).summary()


def test_nesting_beyond_what_cpython_compiles_is_a_specific_finding():
    report = check_source(with_env("a = 1\nx = " + " + ".join(["a"] * 20_000)))
    [finding] = [f for f in report.findings if f.rule == "nesting"]
    assert "nests deeper than CPython parses" in finding.message and "limit about" in finding.message


@pytest.mark.parametrize(
    "literal",
    ["{" + "_" * 60_000, "{" * 60_000, "{ gi_" * 15_000, "{0." * 20_000, "{" + "a" * 30_000 + "__" * 15_000],
    ids=["open-field-of-underscores", "braces", "frame-prefixes", "nested-fields", "long-field"],
)
def test_format_field_scan_is_linear_on_crafted_strings(literal: str):
    """A 60 KB string literal of crafted braces is checked in well under a second (the
    former pattern backtracked quadratically: 13 s for 63 KB)."""
    import time

    src = with_env(f"S = {literal!r}")
    start = time.process_time()
    check_source(src + "\n# " + str(len(literal)))  # never answered from the cache
    assert time.process_time() - start < 0.5
