"""Escapes through names the filters used not to see (issue 16, class 1), each run three ways.

Every attack below reached real ``os``, the real builtins, a frame or a module's globals
inside the worker before the static layer and the guard learned to see it: attribute names
in ``match`` class patterns and captures, strings ``typing`` evaluates as code, format
methods that are not ``str.format``, the builtins of a function, the guard's own helpers,
frames of tracebacks, coroutines and async generators, ``__subclasses__``, private library
entry points that take a module name (``enum.Enum._convert_``), and library functions that
copy attributes named by strings (``functools.update_wrapper``). Once an attack holds
``OS`` (real ``os`` or ``posix``) it reads the root-only file and returns the secret.

The three modes:

* normal path (``guarded``): static layer, guard and OS layers. Each attack must be stopped
  by the static layer or the guard *with a specific message*; none may get as far as the
  OS layers (the outcome is never a policy violation, so no real ``os`` was reached);
* guard alone (``guard``): the static layer off, the guard and the OS layers on
  (``SandboxPool(unsafe_skip_static_check=True, unsafe_runtime_guard=True)``); again a
  specific refusal by the guard, never the OS layers;
* OS layers alone (``os_only``): both filters off; the attack gets what it was after and
  the kernel layers stop the payload (``SandboxPolicyViolation``), or it yields only a repr.
"""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from escape_common import *  # noqa: F403 (the guard_pool fixture)
from escape_common import EscapeAttack
from hostile import POLICY, QUIET, Outcome, env_error, static

#: Once ``OS`` is the real os (or posix) module: read the secret and hand it back.
PAYLOAD = 'fd = OS.open("{SECRET_FILE}", 0)\nreturn OS.read(fd, 200).decode(), 1.0, True, False, {}'


def walk(reach: str) -> str:
    return reach + "\n" + PAYLOAD


#: The guard's compile step refused the source (in the worker, before any of it ran).
def refused(what: str) -> Outcome:
    return env_error(rf"loading the environment raised GuardRefusal: line \d+: {what}")


#: The guard refused at run time (a checked library path, the guarded getattr...).
def guard_error(kind: str, what: str) -> Outcome:
    return env_error(rf"raised {kind}: .*{what}")


FORMAT_FIELD = guard_error("AttributeError", "format field .* is not accessible in the sandbox")
NOT_ACCESSIBLE = "is not accessible in the sandbox"


def attack(id: str, body: str, guarded: Outcome, guard: Outcome, os_only: Outcome, stops: str, prelude: str = "") -> EscapeAttack:
    return EscapeAttack(id, body, guarded, os_only, stops, prelude=prelude, guard=guard)


ATTACKS = [
    # --- match statements name attributes by plain strings --------------------------------
    attack("match-class-function-globals",
           walk("import random\nmatch random.Random.seed:\n    case object(__globals__=g):\n        OS = g['_os']"),
           static("dunder"), refused("attribute '__globals__'"), POLICY,
           "static (match class pattern keywords are attributes); guard compile step; OS layers"),
    attack("match-class-function-builtins",
           walk("def f():\n    pass\nmatch f:\n    case object(__builtins__=b):\n        OS = b['__import__']('os')"),
           static("dunder"), refused("attribute '__builtins__'"), POLICY,
           "static; guard compile step; OS layers"),
    attack("match-class-traceback-frame",
           walk("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    err = e\n"
                "match err:\n    case BaseException(__traceback__=object(tb_frame=frame)):\n        pass\n"
                "OS = None\nwhile frame is not None and OS is None:\n"
                "    match frame:\n        case object(f_globals=g, f_back=back):\n            OS = g.get('os')\n            frame = back"),
           static("dunder"), refused("attribute '__traceback__'"), POLICY,
           "static (dunder and frame keywords); guard compile step; OS layers"),
    attack("match-class-generator-frame",
           walk("def peek():\n    yield 1\ng = peek()\nnext(g)\n"
                "match g:\n    case object(gi_frame=object(f_builtins=b)):\n        OS = b['__import__']('os')"),
           static("frame"), refused("attribute 'gi_frame'"), POLICY,
           "static (frame keyword); guard compile step; OS layers"),
    attack("match-class-subclasses",
           walk("match object:\n    case type(__subclasses__=subclasses):\n        pass\n"
                "w = [c for c in subclasses() if c.__name__ == '_wrap_close'][0]\n"
                "match w.__init__:\n    case object(__globals__=g):\n        OS = type('M', (), {'open': g['open'], 'read': g['read']})"),
           static("dunder"), refused("attribute '__subclasses__'"), POLICY,
           "static; guard compile step; OS layers"),
    attack("match-args-forged-traceback",
           walk("class Caught(Exception):\n    __match_args__ = ('__traceback__',)\n"
                "try:\n    raise Caught()\nexcept Caught as e:\n    err = e\n"
                "match err:\n    case Caught(tb):\n        OS = tb.tb_frame.f_builtins['__import__']('os')"),
           static("dunder"), refused("the name '__match_args__'"), POLICY,
           "static (__match_args__ is a dunder name); guard compile step; OS layers"),
    attack("match-capture-rebinds-builtins",
           "match {'k': 1}:\n    case {**__builtins__}:\n        pass\nreturn str(sorted(__builtins__)), 0.0, False, False, {}",
           static("dunder"), refused("(binding the dunder name|the name) '__builtins__'"), QUIET,
           "static (dunder capture); guard compile step; OS mode: the module's own builtins name only"),
    # --- typing evaluates strings as code --------------------------------------------------------
    attack("forwardref-module-posix",
           walk("import typing\n"
                "def f(o: typing.ForwardRef('open', module='posix'), r: typing.ForwardRef('read', module='posix')):\n"
                "    pass\nhints = typing.get_type_hints(f)\nOS = type('M', (), {'open': hints['o'], 'read': hints['r']})"),
           static("builtin"), guard_error("GuardRefusal", "names module 'posix'"), POLICY,
           "static ('open' in a ForwardRef is code); guard: ForwardRef._evaluate refuses a module's namespace; OS layers",
           prelude="import typing"),
    attack("forwardref-module-posix-innocent-names",
           "import typing\ndef f(x: typing.ForwardRef('read', module='posix')):\n    pass\n"
           "return repr(typing.get_type_hints(f)['x']), 0.0, False, False, {}",
           guard_error("GuardRefusal", "names module 'posix'"), guard_error("GuardRefusal", "names module 'posix'"), QUIET,
           "guard: ForwardRef._evaluate refuses a module's namespace (the static layer sees only plain names); OS mode: a repr",
           prelude="import typing"),
    attack("get-type-hints-fills-globals-with-real-builtins",
           walk("import typing\ng = {}\ndef f(x: 'int'):\n    pass\ntyping.get_type_hints(f, g)\n"
                "OS = g['__builtins__']['__import__']('os')"),
           guard_error("ImportError", "import of 'os' is not allowed in the sandbox"),
           guard_error("ImportError", "import of 'os' is not allowed in the sandbox"), POLICY,
           "guard: eval gets the guard's builtins, never the real ones; OS layers"),
    attack("annotation-string-walks-subclasses",
           walk("import typing\n"
                "def f(x: \"[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0].__init__\"):\n"
                "    pass\ninit = typing.get_type_hints(f)['x']\n"
                "match init:\n    case object(__globals__=g):\n        OS = type('M', (), {'open': g['open'], 'read': g['read']})"),
           static("dunder"), refused("attribute '__globals__'"), POLICY,
           "static (string annotations are code); guard compile step; OS layers"),
    attack("annotation-string-evaluated-by-guard-alone",
           walk("import typing\n"
                "def f(o: W + \".__init__.__globals__['open']\", r: W + \".__init__.__globals__['read']\"):\n"
                "    pass\nhints = typing.get_type_hints(f)\nOS = type('M', (), {'open': hints['o'], 'read': hints['r']})"),
           guard_error("GuardRefusal", "attribute '__\\w+__' is not accessible"),
           guard_error("GuardRefusal", "attribute '__\\w+__' is not accessible"), POLICY,
           "guard: ForwardRef._evaluate checks the string as source (built at run time, the static layer cannot see it); OS layers",
           prelude="W = \"[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]\""),
    attack("forged-module-of-a-class",
           walk("import typing\nH = type('H', (), {'__module__': 'posix', '__annotations__': {'o': 'open', 'r': 'read'}})\n"
                "hints = typing.get_type_hints(H)\nOS = type('M', (), {'open': hints['o'], 'read': hints['r']})"),
           guard_error("GuardRefusal", "may not be evaluated in a module's namespace"),
           guard_error("GuardRefusal", "may not be evaluated in a module's namespace"), POLICY,
           "guard: ForwardRef._evaluate refuses a module's namespace (type() names it by a string); OS layers"),
    attack("singledispatch-annotation",
           walk("import functools\n@functools.singledispatch\ndef f(x):\n    return x\n"
                "@f.register\ndef _(x: \"[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]\"):\n"
                "    return x\nw = [k for k in f.registry if k is not object][0]\n"
                "match w.__init__:\n    case object(__globals__=g):\n        OS = type('M', (), {'open': g['open'], 'read': g['read']})"),
           static("dunder"), refused("attribute '__globals__'"), POLICY,
           "static (singledispatch evaluates the annotation); guard compile step; OS layers"),
    attack("forwardref-evaluate-directly",
           "import typing\nopen_ = typing.ForwardRef('open')._evaluate({}, None, frozenset())\n"
           "return open_('{SECRET_FILE}').read(), 1.0, True, False, {}",
           static("builtin"), refused("attribute '_evaluate'"), POLICY,
           "static; guard compile step (_evaluate runs eval with the globals it is given); OS layers"),
    attack("userstring-format-walk",
           "import collections, random\nu = '_' * 2\n"
           "return collections.UserString('{0.seed.' + u + 'globals' + u + '[_os].environ}').format(random.Random), 0.0, False, False, {}",
           FORMAT_FIELD, FORMAT_FIELD, QUIET,
           "guard: UserString.format is the checked str.format; OS mode: a read-only repr"),
    attack("userstring-format-map-walk",
           "import collections, random\nu = '_' * 2\n"
           "return collections.UserString('{r.seed.' + u + 'globals' + u + '}').format_map({'r': random.Random}), 0.0, False, False, {}",
           FORMAT_FIELD, FORMAT_FIELD, QUIET, "guard: checked format_map; OS mode: a read-only repr"),
    attack("userstring-subclass-super-format",
           "import collections, random\nu = '_' * 2\nclass S(collections.UserString):\n"
           "    def run(self, x):\n        return super().format(x)\n"
           "return S('{0.seed.' + u + 'builtins' + u + '}').run(random.Random), 0.0, False, False, {}",
           FORMAT_FIELD, FORMAT_FIELD, QUIET, "guard: the class's own method is the checked one (super() reaches it too)"),
    attack("partial-of-str-format",
           "import functools, random\nu = '_' * 2\nf = functools.partial(str.format, '{0.seed.' + u + 'globals' + u + '}')\n"
           "return f(random.Random), 0.0, False, False, {}",
           FORMAT_FIELD, FORMAT_FIELD, QUIET, "guard: str.format read from str is the checked one"),
    # --- the builtins of a function, the guard's own helpers ---------------------------------------
    attack("function-builtins-attribute",
           walk("OS = (lambda: 0).__builtins__['__import__']('os')"),
           static("dunder"), refused("attribute '__builtins__'"), POLICY, "static; guard compile step; OS layers"),
    attack("builtins-name",
           walk("OS = __builtins__['__import__']('os')"),
           static("dunder"), refused("the name '__builtins__'"), POLICY, "static; guard compile step; OS layers"),
    attack("guard-helper-globals-through-builtins",
           walk("def f():\n    pass\nmatch f:\n    case object(__builtins__=b):\n        pass\n"
                "helper = b.get('__spade_format_attribute__')\nOS = None\nif helper is not None:\n"
                "    match helper:\n        case object(__globals__=g):\n            OS = g['sys'].modules['os']\n"
                "if OS is None:\n    OS = b['__import__']('os')"),
           static("dunder"), refused("attribute '__builtins__'"), POLICY,
           "static; guard compile step (the helper's globals are the guard's module); OS layers"),
    attack("guard-helper-by-name",
           walk("import random\nseed = __spade_format_attribute__(random.Random, 'seed')\n"
                "match seed:\n    case object(__globals__=g):\n        OS = g['_os']"),
           static("dunder"), refused("the name '__spade_format_attribute__'"), env_error("NameError"),
           "static; guard compile step; OS mode: the name does not exist"),
    attack("guarded-getattr-closure-globals",
           walk("match getattr:\n    case object(__globals__=g):\n        OS = g['sys'].modules['os']\n"
                "    case _:\n        OS = __import__('os')"),
           static("dunder"), refused("attribute '__globals__'"), POLICY,
           "static; guard compile step; OS mode: getattr is the C builtin, __import__ is real"),
    # --- frames of tracebacks, coroutines, async generators ------------------------------------------
    attack("library-traceback-f-builtins",
           walk("import json\ntry:\n    json.loads('not json')\nexcept ValueError as e:\n    tb = e.__traceback__\n"
                "while tb.tb_next is not None:\n    tb = tb.tb_next\nOS = tb.tb_frame.f_builtins['__import__']('os')"),
           static("dunder"), refused("attribute '__traceback__'"), POLICY,
           "static; guard compile step (a library frame's builtins are the real ones); OS layers"),
    attack("coroutine-cr-frame",
           walk("async def peek():\n    return 0\nco = peek()\nframe = co.cr_frame\nco.close()\n"
                "OS = frame.f_globals['__builtins__']['__import__']('os')"),
           static("frame"), refused("attribute 'cr_frame'"), POLICY, "static; guard compile step; OS layers"),
    attack("async-generator-ag-frame",
           walk("async def gen():\n    yield 0\nag = gen()\nframe = ag.ag_frame\n"
                "OS = frame.f_builtins['__import__']('os')"),
           static("frame"), refused("attribute 'ag_frame'"), POLICY, "static; guard compile step; OS layers"),
    attack("generator-code-object",
           walk("def g():\n    yield 1\ncode = g().gi_code\nOS = type(code)\nOS = __import__('os')"),
           static("frame"), refused("attribute 'gi_code'"), POLICY, "static; guard compile step; OS layers"),
    # --- subclasses walks, private library entry points -----------------------------------------------
    attack("subclasses-through-type",
           walk("w = [c for c in type.__subclasses__(object) if c.__name__ == '_wrap_close'][0]\n"
                "g = w.__init__.__globals__\nOS = type('M', (), {'open': g['open'], 'read': g['read']})"),
           static("dunder"), refused("attribute '__subclasses__'"), POLICY, "static; guard compile step; OS layers"),
    attack("enum-convert-module-members",
           walk("import enum\nE = enum.Enum._convert_('E', 'posix', lambda name: name in ('open', 'read'))\n"
                "OS = type('M', (), {'open': E.open.value, 'read': E.read.value})"),
           static("dunder"), refused("attribute '_convert_'"), POLICY,
           "static and guard compile step (_convert_ reads any module in sys.modules); OS layers"),
    attack("enum-convert-through-getattr",
           walk("import enum\nconvert = getattr(enum.Enum, '_con' + 'vert_')\n"
                "E = convert('E', 'posix', lambda name: name in ('open', 'read'))\n"
                "OS = type('M', (), {'open': E.open.value, 'read': E.read.value})"),
           static("dynamic-attribute"), guard_error("AttributeError", "attribute '_convert_' is not accessible"), POLICY,
           "static; guard: getattr refuses the name; OS layers"),
    attack("update-wrapper-plants-builtins",
           walk("import dataclasses, functools, random\nH = dataclasses.make_dataclass('H', ['__builtins__'])\nh = H(None)\n"
                "functools.update_wrapper(h, random.Random.seed, assigned=('__builtins__',), updated=())\n"
                "OS = getattr(h, '__builtins__')['__import__']('os')"),
           static("dunder"), guard_error("AttributeError", "update_wrapper\\(\\) may not copy attribute '__builtins__'"), POLICY,
           "static (getattr of a dunder); guard: update_wrapper copies only allowed names; OS layers"),
    attack("update-wrapper-read-back-through-dataclass-fields",
           walk("import dataclasses, functools, random\nH = dataclasses.make_dataclass('H', ['__builtins__'])\nh = H(None)\n"
                "functools.update_wrapper(h, random.Random.seed, assigned=('__builtins__',), updated=())\n"
                "OS = dataclasses.astuple(h)[0]['__import__']('os')"),
           guard_error("AttributeError", "update_wrapper\\(\\) may not copy attribute '__builtins__'"),
           guard_error("AttributeError", "update_wrapper\\(\\) may not copy attribute '__builtins__'"), POLICY,
           "guard: update_wrapper copies only allowed names (the static layer sees only strings); OS layers"),
    attack("dataclass-field-reads-a-dunder",
           "import dataclasses\nH = dataclasses.make_dataclass('H', ['__module__'])\n"
           "return repr(dataclasses.astuple(H(1))), 0.0, False, False, {}",
           guard_error("TypeError", f"dataclass field '__module__' {NOT_ACCESSIBLE}"),
           guard_error("TypeError", f"dataclass field '__module__' {NOT_ACCESSIBLE}"), QUIET,
           "guard: dataclasses.fields refuses field names that are not allowed attributes"),
]


def _filters_stopped_it(outcome: Outcome) -> None:
    # A filter's stop is a static finding or an error raised in Python inside the worker;
    # never an OS-layer stop, which would mean real os was reached.
    assert outcome.error is not None and outcome.error.__name__ in {"StaticCheckError", "EnvCodeError"}, outcome


def test_the_suite_is_large_and_every_filter_outcome_is_specific():
    assert len(ATTACKS) >= 24
    assert len({a.id for a in ATTACKS}) == len(ATTACKS)
    for a in ATTACKS:
        _filters_stopped_it(a.guarded)
        _filters_stopped_it(a.guard)
        assert a.guarded.match and a.guard.match, a.id


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_guard_alone_contains(guard_pool, decoys, attack):
    assert_contained(guard_pool, attack, attack.guard, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)
