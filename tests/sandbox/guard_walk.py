"""The object-graph walk of ``test_guard_reachability.py``, run in a fresh interpreter set
up as a guarded worker is. Arguments: the domains' extra allowed modules (JSON list), the
depth bound, and ``guarded`` or ``control`` (every attribute name followed). Prints one
JSON object: what dangerous objects were reached and by which path, how many objects were
visited."""

import builtins
import collections
import dataclasses
import functools
import json
import operator
import string
import sys
import types
import typing

from spade_sandbox.allowlist import DEFAULT_ALLOWED_MODULES, attribute_allowed

from spade_sandbox import guard

extra = frozenset(json.loads(sys.argv[1]))
depth_limit = int(sys.argv[2])
control = sys.argv[3] == "control"
allowed = DEFAULT_ALLOWED_MODULES | extra
guard.preimport(sorted(allowed))
originals = {
    "functools.update_wrapper": functools.update_wrapper,
    "dataclasses.fields": dataclasses.fields,
    "typing.ForwardRef._evaluate": typing.ForwardRef._evaluate,
    "collections.UserString.format": collections.UserString.format,
    "collections.UserString.format_map": collections.UserString.format_map,
}
for name in sorted(allowed):
    if not name.endswith(".*") and name in sys.modules:
        guard.module_wrapper(name, allowed)
safe = guard.make_builtins(allowed)
guard.disarm()

source = """
import random, typing
class ProbeEnv:
    def reset(self, seed=None):
        self._rng = random.Random(seed)
        return 'ready', {}
    def step(self, action: 'str'):
        try:
            1 / 0
        except ZeroDivisionError as e:
            self.caught = e
        def gen():
            yield 1
        self.gen = gen()
        return '{}'.format(action), 0.0, False, False, {}
"""
module = types.ModuleType("spade_env")
module.__dict__["__builtins__"] = safe
sys.modules["spade_env"] = module
exec(guard.compile_guarded(source, "<env>"), module.__dict__)
env = module.ProbeEnv()
env.reset(0)
env.step("x")

dangerous = {}
def mark(obj, why):
    dangerous[id(obj)] = (obj, why)
mark(builtins, "the builtins module")
mark(builtins.__dict__, "the real builtins dict")
for name in ("eval", "exec", "compile", "__import__", "open", "globals", "locals", "vars", "breakpoint", "input"):
    mark(getattr(builtins, name), f"builtins.{name}")
for name, m in list(sys.modules.items()):
    if getattr(m, "__dict__", None) is not None:
        mark(m.__dict__, f"the namespace of module {name}")
for name, obj in originals.items():
    mark(obj, f"the original {name} (disarm replaced it)")
mark(str.format, "unchecked str.format")
mark(str.format_map, "unchecked str.format_map")
mark(operator.attrgetter, "operator.attrgetter")
mark(operator.methodcaller, "operator.methodcaller")
mark(string.Formatter, "string.Formatter")
for name in ("module_wrapper", "make_builtins", "preimport", "disarm", "_wrappers", "_builtins", "compile_guarded"):
    mark(getattr(guard, name), f"guard.{name}")
wrappers = {id(w) for w in guard._wrappers.values()}
bad_types = (types.FrameType, types.CodeType, types.TracebackType)

roots = [("builtins", safe), ("env", env), ("env class", module.ProbeEnv), ("caught", env.caught), ("generator", env.gen)]
importer = safe["__import__"]
for name in sorted(allowed):
    if not name.endswith(".*") and name in sys.modules and name != "__future__":
        roots.append((f"import {name}", importer(name, fromlist=["x"])))

seen = set()
found = []
queue = [(path, obj, 0) for path, obj in roots]
visited = 0
module_type = types.ModuleType
while queue and visited < 400000:
    nxt = []
    for path, obj, depth in queue:
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        visited += 1
        hit = dangerous.get(id(obj))
        if hit is not None and hit[0] is obj:
            found.append(f"{path}: {hit[1]}")
            continue
        if isinstance(obj, bad_types):
            found.append(f"{path}: a {type(obj).__name__}")
            continue
        if isinstance(obj, module_type) and id(obj) not in wrappers:
            found.append(f"{path}: the real module {obj.__name__}")
            continue
        if depth >= depth_limit:
            continue
        children = [(f"type({path})", type(obj))]
        if isinstance(obj, dict):
            children += [(f"{path}[{k!r}]", v) for k, v in list(obj.items())[:500]]
            children += [(f"{path} key", k) for k in list(obj)[:500]]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            children += [(f"{path}[{i}]", v) for i, v in enumerate(list(obj)[:500])]
        try:
            names = dir(obj)
        except Exception:
            names = []
        for name in names:
            if not isinstance(name, str) or not (control or attribute_allowed(name)):
                continue
            try:
                value = guard.checked_attribute(getattr(obj, name))
            except Exception:
                continue
            children.append((f"{path}.{name}", value))
        nxt.extend((p, v, depth + 1) for p, v in children)
    queue = nxt
print(json.dumps({"found": found[:400], "count": len(found), "visited": visited,
                  "checked_format_reached": id(guard.checked_format) in seen,
                  "get_type_hints_reached": id(typing.get_type_hints) in seen}))
