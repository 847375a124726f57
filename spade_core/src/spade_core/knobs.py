"""Tunable knobs of an environment: declared in its source, read without running it.

Part of the environment contract (the kernel's): the designer edits knobs, the trainer's
adaptive baseline climbs their difficulty, ``spade serve`` lists their settings as tasks,
all through this one reader (``spade_designer.knobs`` re-exports it).

An environment class may declare the class constants an edit is allowed to change::

    class SonarSearchEnv:
        SIZE = 8
        PINGS = 6
        KNOBS = {"SIZE": (int, 5, 12), "PINGS": (int, 3, 10)}

``KNOBS`` maps a class constant's name to its type and range:

* ``(int, low, high)`` / ``(float, low, high)`` — inclusive bounds;
* ``(bool,)`` — ``True`` or ``False``;
* ``(str, "a", "b", ...)`` — one of the listed choices.

Which way is harder may be declared beside it, for the knobs where one way is::

        HARDER = {"SIZE": "higher", "PINGS": "lower"}

(a higher ``SIZE``, fewer ``PINGS``: harder; for a ``str`` knob "higher" means later in its
list of choices, for a ``bool`` knob ``True``). :func:`difficulty_ladder` turns the
declared directions into levels from easiest to hardest, which the adaptive fixed-pool
baseline (``spade_trainer.adaptive``) moves along by the agent's measured success.

The block is a literal, read with :mod:`ast` (:func:`read_knobs`): nothing is executed, so
the designer can read the knobs of untrusted stored code. The current value of each knob
is the literal assigned to the constant in the class body. :func:`apply_values` writes
new values into the source by replacing exactly those literals, so the child differs
from its parent in nothing else. Every value is checked against its declaration first
(:func:`check_values`); a value outside it is a :class:`KnobValueError` naming the knob,
the value and the declared range.

Every reader converts numeric bounds to floats, so a declaration they cannot hold is
refused where it is read, as a :class:`KnobDeclarationError` naming the knob: an int bound
beyond +/-2**53 (:data:`MAX_INT_BOUND`: a 401-digit bound used to raise ``OverflowError``
in every reader, so a designer's frontier or a server's task list failed with it), a
non-finite float bound, a range wider than a float. Nothing the block holds raises anything
else, and a value no knob can take is a :class:`KnobValueError`.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import SpadeError

#: The class attribute holding the declarations.
KNOBS_ATTRIBUTE = "KNOBS"
#: The class attribute saying which way each knob is harder (``"higher"`` / ``"lower"``).
HARDER_ATTRIBUTE = "HARDER"
_DIRECTIONS = {"higher": 1, "lower": -1}

KnobValue = bool | int | float | str

_TYPES = {"int": int, "float": float, "bool": bool, "str": str}
#: What ``ast.literal_eval`` raises for a literal it cannot build (an unhashable key, a
#: nesting past the interpreter's depth) besides the ValueError of a non-literal.
_LITERAL_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)


class KnobDeclarationError(SpadeError):
    """A ``KNOBS`` block that cannot be read: not a literal, an unknown type, bad bounds,
    a knob without a constant or a current value outside its own range."""


class KnobValueError(SpadeError):
    """Knob values an edit proposed that the declarations do not allow (unknown knob,
    wrong type, out of range, not a listed choice)."""


@dataclass(frozen=True)
class Knob:
    """One declared knob and its current value."""

    name: str
    type: type
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    value: KnobValue = 0
    #: Which way is harder: +1 a higher value (later choice, True), -1 lower, 0 not declared.
    harder: int = 0

    def describe(self) -> str:
        """The declared range, as the edit prompt and error messages show it."""
        if self.type is bool:
            return "True or False"
        if self.type is str:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return f"{self.type.__name__} from {_num(self.low)} to {_num(self.high)}"

    def check(self, value: object) -> KnobValue:
        """``value`` as this knob's type, or :class:`KnobValueError` saying why it is not allowed."""
        where = f"knob {self.name} ({self.describe()})"
        if self.type is bool:
            if not isinstance(value, bool):
                raise KnobValueError(f"{where}: {value!r} is not True or False")
            return value
        if self.type is str:
            if not isinstance(value, str) or value not in self.choices:
                raise KnobValueError(f"{where}: {value!r} is not one of the declared choices")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise KnobValueError(f"{where}: {value!r} is not a number")
        if self.type is int:
            if isinstance(value, float):
                if not value.is_integer():
                    raise KnobValueError(f"{where}: {value!r} is not a whole number")
                value = int(value)
        else:
            try:
                value = float(value)
            except OverflowError:  # an int past a float's range
                raise KnobValueError(f"{where}: {_shown(value)} is beyond a float's range") from None
            if not math.isfinite(value):
                raise KnobValueError(f"{where}: {value!r} is not finite")
        assert self.low is not None and self.high is not None
        if not self.low <= value <= self.high:
            raise KnobValueError(f"{where}: {_shown(value)} is outside the declared range [{_num(self.low)}, {_num(self.high)}]")
        return value


def _num(x: float | None) -> str:
    return "?" if x is None else (str(int(x)) if float(x).is_integer() else repr(x))


@dataclass(frozen=True)
class KnobSet:
    """The knobs of one environment class, in declaration order."""

    class_name: str
    knobs: tuple[Knob, ...]

    def __bool__(self) -> bool:
        return bool(self.knobs)

    def __len__(self) -> int:
        return len(self.knobs)

    def get(self, name: str) -> Knob | None:
        return next((k for k in self.knobs if k.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    def values(self) -> dict[str, KnobValue]:
        return {k.name: k.value for k in self.knobs}


def _env_class(tree: ast.Module, class_name: str | None) -> ast.ClassDef | None:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if class_name is not None:
        return next((c for c in classes if c.name == class_name), None)
    declaring = [c for c in classes if any(_assigned(s) == KNOBS_ATTRIBUTE for s in c.body)]
    if declaring:
        return declaring[-1]
    named = [c for c in classes if c.name.endswith("Env")]
    return named[-1] if named else None


def _assigned(stmt: ast.stmt) -> str | None:
    """The single name a class-body statement assigns (``X = ...`` or ``X: T = ...``)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id
    return None


def _constants(cls: ast.ClassDef) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for stmt in cls.body:
        name = _assigned(stmt)
        if name is not None:
            out[name] = stmt.value  # type: ignore[union-attr, assignment]
    return out


def _declared(name: str, spec: ast.expr) -> Knob:
    if not isinstance(spec, ast.Tuple) or not spec.elts or not isinstance(spec.elts[0], ast.Name):
        raise KnobDeclarationError(f"knob {name}: declare it as (int, low, high), (float, low, high), (bool,) or "
                                   "(str, choice, ...)")
    kind = _TYPES.get(spec.elts[0].id)
    if kind is None:
        raise KnobDeclarationError(f"knob {name}: type {spec.elts[0].id!r} is not int, float, bool or str")
    try:
        rest = [ast.literal_eval(e) for e in spec.elts[1:]]
    except _LITERAL_ERRORS:
        raise KnobDeclarationError(f"knob {name}: its bounds or choices must be literals") from None
    if kind is bool:
        if rest:
            raise KnobDeclarationError(f"knob {name}: (bool,) takes no bounds")
        return Knob(name, bool)
    if kind is str:
        if not rest or not all(isinstance(c, str) for c in rest) or len(set(rest)) != len(rest):
            raise KnobDeclarationError(f"knob {name}: (str, ...) needs distinct string choices")
        return Knob(name, str, choices=tuple(rest))
    if len(rest) != 2 or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in rest):
        raise KnobDeclarationError(f"knob {name}: ({kind.__name__}, low, high) needs two numeric bounds")
    low, high = rest
    if kind is int and not all(isinstance(b, int) for b in rest):
        raise KnobDeclarationError(f"knob {name}: an int knob needs int bounds")
    for bound in rest:
        problem = _bound_problem(kind, bound)
        if problem:
            raise KnobDeclarationError(f"knob {name}: bound {_shown(bound)} {problem}")
    if not low < high:
        raise KnobDeclarationError(f"knob {name}: low {low!r} must be below high {high!r}")
    if not math.isfinite(float(high) - float(low)):
        raise KnobDeclarationError(f"knob {name}: the range from {low!r} to {high!r} is wider than a float holds")
    return Knob(name, kind, float(low), float(high))


#: Largest magnitude of an int knob's bound: every int up to it is exactly a float, so a
#: bound, a ladder step and a comparison never round or overflow (2**53).
MAX_INT_BOUND = 2**53


def _bound_problem(kind: type, bound: float) -> str | None:
    """Why a numeric bound cannot be handled (every reader converts bounds to floats), or None."""
    if kind is int and abs(bound) > MAX_INT_BOUND:
        return f"is beyond +/-2**53 ({MAX_INT_BOUND}), past what a float holds exactly"
    try:
        as_float = float(bound)
    except OverflowError:
        return "is beyond a float's range"
    return None if math.isfinite(as_float) else "is not finite"


def _shown(value: object) -> str:
    """``value`` for a message, a huge integer by its size rather than its 400 digits."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"(an integer of about {int(value.bit_length() * 0.30103) + 1} digits)"
    return repr(value)


def read_knobs(source: str, class_name: str | None = None) -> KnobSet:
    """The knobs ``source`` declares (an empty set when its class has no ``KNOBS``).

    ``class_name`` picks the class; by default the one declaring ``KNOBS`` (else the last
    class ending in ``Env``). Raises :class:`KnobDeclarationError` for a block that cannot
    be read, or :class:`KnobDeclarationError` too when the source does not parse or the
    class is missing.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise KnobDeclarationError(f"the source does not parse (line {exc.lineno}): {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:  # NUL bytes, nesting past the parser's
        raise KnobDeclarationError(f"the source does not parse: {type(exc).__name__}") from None
    cls = _env_class(tree, class_name)
    if cls is None:
        raise KnobDeclarationError(f"no class {class_name!r} in the source" if class_name else "no environment class")
    constants = _constants(cls)
    block = constants.get(KNOBS_ATTRIBUTE)
    if block is None:
        return KnobSet(cls.name, ())
    if not isinstance(block, ast.Dict) or any(k is None for k in block.keys):
        raise KnobDeclarationError(f"{cls.name}.{KNOBS_ATTRIBUTE} must be a dict literal")
    knobs: list[Knob] = []
    for key, spec in zip(block.keys, block.values, strict=True):
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            raise KnobDeclarationError(f"{cls.name}.{KNOBS_ATTRIBUTE}: keys must be constant names as strings")
        name = key.value
        if name == KNOBS_ATTRIBUTE or name in {k.name for k in knobs}:
            raise KnobDeclarationError(f"{cls.name}.{KNOBS_ATTRIBUTE}: knob {name!r} is declared twice or names the block")
        knob = _declared(name, spec)
        node = constants.get(name)
        if node is None:
            raise KnobDeclarationError(f"knob {name}: {cls.name} has no class constant {name} = <literal> in its own "
                                       "body (a constant it inherits, such as a base class's max_steps, must be "
                                       "assigned again there to be a knob)")
        try:
            current = ast.literal_eval(node)
        except _LITERAL_ERRORS:
            raise KnobDeclarationError(f"knob {name}: {cls.name}.{name} must be a literal value") from None
        try:
            current = knob.check(current)
        except KnobValueError as exc:
            raise KnobDeclarationError(f"the current value does not fit its own declaration: {exc}") from None
        knobs.append(Knob(knob.name, knob.type, knob.low, knob.high, knob.choices, current))
    harder = _harder(cls.name, constants.get(HARDER_ATTRIBUTE), [k.name for k in knobs])
    return KnobSet(cls.name, tuple(Knob(k.name, k.type, k.low, k.high, k.choices, k.value, harder.get(k.name, 0))
                                   for k in knobs))


def _harder(cls: str, block: ast.expr | None, names: list[str]) -> dict[str, int]:
    """The ``HARDER`` block of class ``cls``: knob name -> +1 / -1."""
    if block is None:
        return {}
    where = f"{cls}.{HARDER_ATTRIBUTE}"
    try:
        value = ast.literal_eval(block)
    except _LITERAL_ERRORS:
        raise KnobDeclarationError(f"{where} must be a dict literal such as {{'SIZE': 'higher'}}") from None
    if not isinstance(value, dict):
        raise KnobDeclarationError(f"{where} must be a dict literal such as {{'SIZE': 'higher'}}")
    out: dict[str, int] = {}
    for name, way in value.items():
        if name not in names:
            raise KnobDeclarationError(f"{where}: {name!r} is not a declared knob (declared: {', '.join(names) or 'none'})")
        if not isinstance(way, str) or way not in _DIRECTIONS:
            raise KnobDeclarationError(f"{where}[{name!r}] must be 'higher' or 'lower' (which way is harder), got {way!r}")
        out[name] = _DIRECTIONS[way]
    return out


def difficulty_ladder(knobs: KnobSet, levels: int = 5) -> list[dict[str, KnobValue]]:
    """Knob settings from easiest to hardest: every knob with a declared direction moves
    together from its easy end to its hard end in ``levels`` steps (ints rounded, a bool
    switching half-way, a str knob along its choices); knobs without one keep their value.
    Settings that come out alike are kept once; no directed knob: an empty ladder."""
    directed = [k for k in knobs.knobs if k.harder]
    if not directed or levels < 1:
        return []
    ladder: list[dict[str, KnobValue]] = []
    for i in range(levels):
        t = i / (levels - 1) if levels > 1 else 1.0
        values = knobs.values()
        for k in directed:
            values[k.name] = _at(k, t)
        if not ladder or ladder[-1] != values:
            ladder.append(values)
    return ladder


def _at(knob: Knob, t: float) -> KnobValue:
    """The value of ``knob`` at ``t`` of the way from its easy end (0) to its hard end (1)."""
    if knob.type is bool:
        hard = knob.harder > 0
        return hard if t >= 0.5 else not hard
    if knob.type is str:
        order = knob.choices if knob.harder > 0 else tuple(reversed(knob.choices))
        return order[round(t * (len(order) - 1))]
    assert knob.low is not None and knob.high is not None
    easy, hard = (knob.low, knob.high) if knob.harder > 0 else (knob.high, knob.low)
    value = easy + t * (hard - easy)
    return int(round(value)) if knob.type is int else float(value)


def check_values(knobs: KnobSet, values: Mapping[str, object]) -> dict[str, KnobValue]:
    """``values`` checked against the declarations (converted to each knob's type).

    Every error is collected, so the message names every value that is not allowed.
    """
    if not values:
        raise KnobValueError("the edit sets no knob; declared: " + _declared_list(knobs))
    out: dict[str, KnobValue] = {}
    problems: list[str] = []
    for name, value in values.items():
        knob = knobs.get(name)
        if knob is None:
            problems.append(f"{name!r} is not a knob of {knobs.class_name} (declared: {_declared_list(knobs)})")
            continue
        try:
            out[name] = knob.check(value)
        except KnobValueError as exc:
            problems.append(str(exc))
    if problems:
        raise KnobValueError("; ".join(problems))
    return out


def _declared_list(knobs: KnobSet) -> str:
    return ", ".join(f"{k.name} ({k.describe()})" for k in knobs.knobs) or "none"


def apply_values(source: str, knobs: KnobSet, values: Mapping[str, object]) -> str:
    """``source`` with the literals of the given knobs replaced by the checked ``values``;
    every other character is the parent's."""
    checked = check_values(knobs, values)
    tree = ast.parse(source)
    cls = _env_class(tree, knobs.class_name)
    assert cls is not None  # read_knobs found it in this source
    nodes = _constants(cls)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")
    # replace from the end so earlier offsets stay valid
    spans = sorted(((nodes[n], v) for n, v in checked.items()), key=lambda nv: (nv[0].lineno, nv[0].col_offset),
                   reverse=True)
    for node, value in spans:
        start = offsets[node.lineno - 1] + node.col_offset
        end = offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[operator]
        data = data[:start] + repr(value).encode("utf-8") + data[end:]
    return data.decode("utf-8")


_PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(\"[^\"\n]*\"|'[^'\n]*'|[^,;\s)]+)")


def parse_values(reply: str, knobs: KnobSet) -> dict[str, object]:
    """The ``NAME=value`` pairs of a reply, read leniently: names case-insensitive, ``=``
    or ``:``, separated by commas, semicolons, spaces or lines, values with or without
    quotes; pairs whose name is not a knob are ignored (prose such as ``note: ...``).

    Values are parsed (int, float, True/False, or the text) but not checked: that is
    :func:`check_values`' strict job. A knob given twice keeps its first value.
    """
    by_lower = {k.name.lower(): k for k in knobs.knobs}
    out: dict[str, object] = {}
    for name, raw in _PAIR.findall(reply):
        knob = by_lower.get(name.lower())
        if knob is None or knob.name in out:
            continue
        out[knob.name] = _parse_value(raw.rstrip(".").strip(), knob)
    return out


def _parse_value(raw: str, knob: Knob) -> object:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    if knob.type is str:
        return raw
    if knob.type is bool:
        low = raw.lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        return raw
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def format_values(values: Mapping[str, object]) -> str:
    """``NAME=value, ...``: the reply format the edit prompt asks for."""
    return ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in values.items())
