"""Interpreter escapes: ways from allowed objects to ``os``/``sys``/builtins without
importing them — module-attribute walks, ``__subclasses__``, frames of generators, gc,
``str.format`` and ``string.Formatter`` / ``operator.attrgetter`` attribute walks, import
tricks, threads, ctypes. Each attack ends with the same payload once it holds ``os``:
read the root-only file and return the secret as the observation.

On the normal path the static layer or the runtime guard (module wrappers without module
attributes or private names; ``getattr`` without dunders) stops most of them. Some walks
get through both filters (marked below); the OS layers stop the payload in every case,
which is the boundary the design relies on."""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import POLICY, QUIET, Attack, env_error, static

#: Once ``OS`` is the real os module: read the secret and hand it back.
PAYLOAD = 'fd = OS.open("{SECRET_FILE}", 0)\nreturn OS.read(fd, 200).decode(), 1.0, True, False, {}'
NO_ATTRIBUTE = env_error("AttributeError")


def walk(reach: str) -> str:
    return reach + "\n" + PAYLOAD


#: The guard's module wrappers do not carry operator.attrgetter / string.Formatter.
WRAPPER_LEFT_OUT = env_error("has no attribute '(attrgetter|Formatter)'")
#: The guard's checked str.format refuses fields reaching dunder or frame attributes.
FORMAT_FIELD = env_error("AttributeError: format field .* is not accessible in the sandbox")

ATTACKS = [
    # --- module attributes that are modules, or private names ------------------------
    Attack("dataclasses-sys", walk('import dataclasses\nOS = dataclasses.sys.modules["os"]'),
           NO_ATTRIBUTE, POLICY, "guard (wrapper has no module attributes); OS layers"),
    Attack("typing-sys", walk('import typing\nOS = typing.sys.modules["os"]'),
           NO_ATTRIBUTE, POLICY, "guard; OS layers"),
    Attack("json-codecs-open", 'import json\nreturn json.codecs.open("{SECRET_FILE}").read(), 0.0, False, False, {}',
           NO_ATTRIBUTE, POLICY, "guard; OS layers"),
    Attack("random-private-os", walk("import random\nOS = random._os"),
           NO_ATTRIBUTE, POLICY, "guard (no private names); OS layers"),
    Attack("collections-private-sys", walk('import collections\nOS = collections._sys.modules["os"]'),
           NO_ATTRIBUTE, POLICY, "guard; OS layers"),
    Attack("function-globals", walk('import random\nOS = random.Random.seed.__globals__["_os"]'),
           static("dunder"), POLICY, "static; OS layers"),
    # --- the object graph ------------------------------------------------------------------
    Attack("subclasses-wrap-close",
           walk('w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close"][0]\n'
                "OS = type('M', (), w.__init__.__globals__)\nOS.open = w.__init__.__globals__['open']\n"
                "OS.read = w.__init__.__globals__['read']"),
           static("dunder"), POLICY, "static; OS layers"),
    Attack("generator-frame-walk",
           walk("def peek():\n    yield g.gi_frame.f_back\ng = peek()\nframe = next(g)\nOS = None\n"
                "while frame is not None and OS is None:\n    OS = frame.f_globals.get('os')\n    frame = frame.f_back"),
           static("frame"), POLICY, "static; OS layers"),
    Attack("traceback-frame-walk",
           walk("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    frame = e.__traceback__.tb_frame\nOS = None\n"
                "while frame is not None and OS is None:\n    OS = frame.f_globals.get('os')\n    frame = frame.f_back"),
           static("dunder"), POLICY, "static; OS layers"),
    Attack("gc-get-referrers",
           walk('import gc, json\nglobs = [r for r in gc.get_referrers(json.dumps) if isinstance(r, dict) and "codecs" in r][0]\n'
                'OS = globs["codecs"].sys.modules["os"]'),
           static("import"), env_error("IndexError"), "static; gc.freeze in the zygote hides module dicts"),
    Attack("gc-get-objects",
           walk('import gc\nOS = [o for o in gc.get_objects() if type(o).__name__ == "module" and o.__name__ == "posix"][0]'),
           static("import"), env_error("IndexError"), "static; gc.freeze hides the zygote's heap; OS layers"),
    # --- attribute walks through formatting helpers ---------------------------------------
    Attack("str-format-mro-literal", "return '{0.__class__.__mro__}'.format(self), 0.0, False, False, {}",
           static("format"), QUIET, "static (format rule); yields only a repr"),
    Attack("str-format-walk-built-at-runtime",
           "u = '_' * 2\nspec = '{0.seed.' + u + 'globals' + u + '[_os].environ}'\nimport random\n"
           "return spec.format(random.Random), 0.0, False, False, {}",
           FORMAT_FIELD, QUIET, "guard: .format is the checked str.format; OS mode: read-only repr, empty environment"),
    Attack("str-format-map-walk-built-at-runtime",
           "u = '_' * 2\nspec = '{r.seed.' + u + 'globals' + u + '}'\nimport random\n"
           "return spec.format_map({'r': random.Random}), 0.0, False, False, {}",
           FORMAT_FIELD, QUIET, "guard: checked str.format_map"),
    Attack("str-format-unbound-method",
           "u = '_' * 2\nimport random\n"
           "return str.format('{0.seed.' + u + 'globals' + u + '}', random.Random), 0.0, False, False, {}",
           FORMAT_FIELD, QUIET, "guard: str.format read as an attribute of str is the checked one"),
    Attack("str-format-through-getattr",
           "u = '_' * 2\nimport random\nfmt = getattr('{0.seed.' + u + 'globals' + u + '}', 'for' + 'mat')\n"
           "return fmt(random.Random), 0.0, False, False, {}",
           static("dynamic-attribute"), QUIET, "static (computed getattr); guard: getattr hands out the checked method"),
    Attack("str-format-nested-in-spec",
           "u = '_' * 2\nimport random\nspec = '{0:{1.seed.' + u + 'globals' + u + '}}'\n"
           "return spec.format(1, random.Random), 0.0, False, False, {}",
           FORMAT_FIELD, QUIET, "guard: fields nested in a format spec are checked too"),
    Attack("str-subclass-format-via-super",
           "u = '_' * 2\nimport random\nclass S(str):\n    def run(self, x):\n        return super().format(x)\n"
           "return S('{0.seed.' + u + 'globals' + u + '}').run(random.Random), 0.0, False, False, {}",
           FORMAT_FIELD, QUIET, "guard: a bound str.format of a str subclass is checked"),
    Attack("str-format-map-of-a-stored-method",
           "u = '_' * 2\nimport random\nf = str.format\n"
           "return list(map(f, ['{0.seed.' + u + 'globals' + u + '}'], [random.Random]))[0], 0.0, False, False, {}",
           FORMAT_FIELD, QUIET, "guard: the stored method is the checked one"),
    Attack("string-formatter-get-field",
           walk("import string, random\nu = '_' * 2\n"
                "globs = string.Formatter().get_field('0.seed.' + u + 'globals' + u, [random.Random], {})[0]\nOS = globs['_os']"),
           WRAPPER_LEFT_OUT, POLICY, "guard: the module wrapper leaves the string-driven attribute walker out; OS layers"),
    Attack("operator-attrgetter-dunder",
           walk("import operator, random\nOS = operator.attrgetter('seed.__globals__')(random.Random)['_os']"),
           WRAPPER_LEFT_OUT, POLICY, "guard: the module wrapper leaves the string-driven attribute walker out; OS layers"),
    Attack("getattr-computed-dunder",
           walk("import random\nname = '_' * 2 + 'globals' + '_' * 2\nOS = getattr(random.Random.seed, name)['_os']"),
           static("dynamic-attribute"), POLICY, "static; guard getattr; OS layers"),
    # --- import tricks -------------------------------------------------------------------------
    Attack("dunder-import", walk('OS = __import__("os")'), static("builtin"), POLICY, "static; OS layers"),
    Attack("importlib-import-module", walk('import importlib\nOS = importlib.import_module("os")'),
           static("import"), POLICY, "static; OS layers"),
    Attack("builtins-module-open", 'import builtins\nreturn builtins.open("{SECRET_FILE}").read(), 0.0, False, False, {}',
           static("import"), POLICY, "static; OS layers"),
    Attack("import-unlisted-from-disk", "import sqlite3\nreturn str(sqlite3), 0.0, False, False, {}",
           static("import"), env_error("No module named 'sqlite3'"), "static; landlock/seccomp hide the disk"),
    Attack("from-import-private", walk("from random import _os as OS"), static("import"), POLICY, "static; OS layers"),
    Attack("exec-eval-compile", 'exec("import os")', static("builtin"), QUIET, "static; OS layers"),
    # --- threads and ctypes -----------------------------------------------------------------
    Attack("thread-outlives-deadline",
           "import threading\nthreading.Thread(target=lambda: open('{CANARY}', 'w').write('late')).start()",
           static("import"), env_error("can't start new thread"), "static; seccomp clone=EPERM"),
    Attack("raw-thread-start", "import _thread\n_thread.start_new_thread(print, ('x',))",
           static("import"), env_error("can't start new thread"), "static; seccomp clone=EPERM"),
    Attack("ctypes-libc-open",
           'import ctypes\nlibc = ctypes.CDLL(None)\nfd = libc.open(b"{SECRET_FILE}", 0)\nbuf = ctypes.create_string_buffer(200)\n'
           "libc.read(fd, buf, 200)\nreturn buf.value.decode(), 0.0, False, False, {}",
           static("import"), QUIET, "static; seccomp openat=EPERM (libc returns -1)"),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)
