"""Mutation operators: each turns a sound environment's source into one with a known
semantic defect, or returns ``None`` where it does not apply.

They work on the syntax tree (``ast``), not on one file's text, so they apply to the seed
games and to environments written elsewhere alike: a win is a ``return`` whose reward is
the top of the range next to a ``True`` flag, an invalid-action answer is a ``return``
whose text says so, the turn cap is a comparison with an attribute named like one. The
source comes back through ``ast.unparse`` (comments are lost; behaviour is not).

Each operator belongs to one class of defect (:data:`CLASSES`); a mutant is kept in the
corpus only if it behaves differently from its parent (:mod:`.corpus`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

#: Words an invalid-action answer says.
_INVALID_WORDS = ("invalid", "unknown", "please", "could not", "couldn't", "not understood", "unrecognized",
                  "unrecognised", "format", "malformed", "wrap", "use \\\\boxed", "expected")
#: Names a secret is usually kept under (preferred when several attributes feed solution()).
_SECRET_WORDS = ("secret", "code", "target", "answer", "word", "hidden", "goal", "exit", "solution", "key",
                 "number", "culprit", "combo", "password", "rule", "treasure", "mine", "ship")
#: Attribute names of a turn cap.
_CAP_WORDS = ("max_turn", "max_step", "turn_limit", "max_moves", "max_guesses", "limit")


# --- locating things ----------------------------------------------------------------------


def env_class(tree: ast.Module) -> ast.ClassDef | None:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Env")]
    return classes[-1] if classes else None


def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _methods(cls: ast.ClassDef) -> list[ast.FunctionDef]:
    return [n for n in cls.body if isinstance(n, ast.FunctionDef)]


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    return None


def _is_true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _tuple_returns(fn: ast.FunctionDef) -> Iterator[ast.Return]:
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) in (3, 5):
            yield node


def _reward_index(ret: ast.Return) -> int:
    return 1


def win_returns(cls: ast.ClassDef, top: float = 1.0) -> list[ast.Return]:
    """``return`` tuples (the 5-tuple of ``step`` or a helper's ``(obs, reward, done)``)
    whose reward is the literal top of the range and whose next flag is ``True``."""
    out = []
    for fn in _methods(cls):
        if fn.name in ("reset", "solution", "__init__"):
            continue
        for ret in _tuple_returns(fn):
            elts = ret.value.elts  # type: ignore[union-attr]
            if _number(elts[1]) == top and _is_true(elts[2]):
                out.append(ret)
    return out


def _mentions(node: ast.AST, words: tuple[str, ...]) -> bool:
    for sub in ast.walk(node):
        name = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else None
        if name and any(w in name.lower() for w in words):
            return True
    return False


def _text_of(node: ast.AST) -> str:
    """The string literals inside an expression, joined (what a message says)."""
    return " ".join(s.value for s in ast.walk(node) if isinstance(s, ast.Constant) and isinstance(s.value, str))


def _self_reads(fn: ast.FunctionDef) -> list[str]:
    out: list[str] = []
    for node in ast.walk(fn):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                and isinstance(node.ctx, ast.Load) and node.attr not in out):
            out.append(node.attr)
    return out


def _self_assigned(fn: ast.FunctionDef) -> list[str]:
    out: list[str] = []
    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else []
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                    if sub.attr not in out:
                        out.append(sub.attr)
    return out


def secret_attribute(cls: ast.ClassDef) -> str | None:
    """The attribute ``solution()`` reads that ``reset`` draws: the hidden answer."""
    sol, reset = method(cls, "solution"), method(cls, "reset")
    if sol is None or reset is None:
        return None
    drawn = set(_self_assigned(reset))
    reads = [a for a in _self_reads(sol) if a in drawn]
    if not reads:
        return None
    for word in _SECRET_WORDS:
        for a in reads:
            if word in a.lower():
                return a
    return reads[0]


def _parse(source: str) -> tuple[ast.Module, ast.ClassDef] | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    cls = env_class(tree)
    return (tree, cls) if cls is not None else None


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _stmts(text: str) -> list[ast.stmt]:
    return ast.parse(text).body


def _out(tree: ast.Module) -> str:
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# --- operators ----------------------------------------------------------------------------

Operator = Callable[[str], "str | None"]


def leak_at_reset(source: str) -> str | None:
    """The reset observation prints the hidden answer."""
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    secret, reset = secret_attribute(cls), method(cls, "reset")
    if secret is None or reset is None:
        return None
    changed = False
    for ret in [n for n in ast.walk(reset) if isinstance(n, ast.Return)]:
        if isinstance(ret.value, ast.Tuple) and len(ret.value.elts) == 2:
            ret.value.elts[0] = _expr(f"str({ast.unparse(ret.value.elts[0])}) + ' (debug: {secret}=' + str(self.{secret}) + ')'")
            changed = True
    return _out(tree) if changed else None


def leak_on_second_step(source: str) -> str | None:
    """The observation of the second step prints the hidden answer (while the game runs)."""
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    secret, reset, step = secret_attribute(cls), method(cls, "reset"), method(cls, "step")
    if secret is None or reset is None or step is None:
        return None
    reset.name, step.name = "_mut_reset", "_mut_step"
    cls.body += _stmts(
        "def reset(self, seed=None):\n"
        "    self._mut_n = 0\n"
        "    return self._mut_reset(seed)\n"
        "def step(self, action):\n"
        "    out = self._mut_step(action)\n"
        "    self._mut_n += 1\n"
        "    if self._mut_n == 2 and not out[2] and not out[3]:\n"
        f"        out = (out[0] + ' By the way, the {secret} is ' + str(self.{secret}) + '.',) + tuple(out[1:])\n"
        "    return out\n"
    )
    return _out(tree)


def _done_guard(step: ast.FunctionDef) -> ast.Return | None:
    """``if self.done: return obs, 0.0, True, False, {}`` at the top of ``step``."""
    for node in step.body[:3]:
        if isinstance(node, ast.If) and len(node.body) == 1 and isinstance(node.body[0], ast.Return):
            ret = node.body[0]
            if isinstance(ret.value, ast.Tuple) and len(ret.value.elts) == 5 and _is_true(ret.value.elts[2]):
                return ret
    return None


def after_end_pays_again(source: str) -> str | None:
    """A step after the episode ended pays full reward again."""
    parsed = _parse(source)
    if parsed is None or (step := method(parsed[1], "step")) is None or (guard := _done_guard(step)) is None:
        return None
    guard.value.elts[1] = ast.Constant(1.0)  # type: ignore[union-attr]
    return _out(parsed[0])


def after_end_unterminates(source: str) -> str | None:
    """A step after the episode ended says the episode goes on."""
    parsed = _parse(source)
    if parsed is None or (step := method(parsed[1], "step")) is None or (guard := _done_guard(step)) is None:
        return None
    guard.value.elts[2] = ast.Constant(False)  # type: ignore[union-attr]
    return _out(parsed[0])


def after_end_unguarded(source: str) -> str | None:
    """The guard against steps after the end is gone: the game goes on being played."""
    parsed = _parse(source)
    if parsed is None or (step := method(parsed[1], "step")) is None or _done_guard(step) is None:
        return None
    for i, node in enumerate(step.body[:3]):
        if isinstance(node, ast.If) and len(node.body) == 1 and isinstance(node.body[0], ast.Return):
            del step.body[i]
            break
    return _out(parsed[0])


def _enclosing_ifs(cls: ast.ClassDef, target: ast.AST) -> list[ast.If]:
    """The ``if`` statements whose body (not else) holds ``target``, innermost last."""
    out: list[ast.If] = []

    def visit(node: ast.AST, chain: list[ast.If]) -> bool:
        if node is target:
            out.extend(chain)
            return True
        for field, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, ast.AST):
                    nxt = chain + [node] if isinstance(node, ast.If) and field == "body" else chain
                    if visit(item, nxt):
                        return True
        return False

    visit(cls, [])
    return out


class _OffByOne(ast.NodeTransformer):
    def __init__(self) -> None:
        self.changed = False

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        if self.changed or len(node.ops) != 1:
            return node
        op, left, right = node.ops[0], node.left, node.comparators[0]
        flips = {ast.GtE: ast.Gt, ast.Gt: ast.GtE, ast.LtE: ast.Lt, ast.Lt: ast.LtE}
        if type(op) in flips:
            self.changed = True
            return ast.Compare(left=left, ops=[flips[type(op)]()], comparators=[right])
        if isinstance(op, ast.Eq):
            self.changed = True
            a, b = ast.unparse(left), ast.unparse(right)
            return _expr(
                f"(({a}) == ({b})) or (isinstance({a}, int) and isinstance({b}, int) and abs(({a}) - ({b})) == 1)"
            )
        return node


def win_off_by_one(source: str) -> str | None:
    """The comparison that decides the win is off by one (a neighbour of the answer wins,
    or a bound is met one step early or late)."""
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    for ret in win_returns(cls):
        for branch in reversed(_enclosing_ifs(cls, ret)):
            fixer = _OffByOne()
            branch.test = fixer.visit(branch.test)
            if fixer.changed:
                return _out(tree)
    return None


def _edit_wins(source: str, index: int, value: object) -> str | None:
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    wins = win_returns(cls)
    if not wins:
        return None
    for ret in wins:
        ret.value.elts[index] = ast.Constant(value)  # type: ignore[union-attr]
    return _out(tree)


def win_not_terminated(source: str) -> str | None:
    """Winning pays full reward but never ends the episode."""
    return _edit_wins(source, 2, False)


def win_unpaid(source: str) -> str | None:
    """Winning ends the episode without paying."""
    return _edit_wins(source, 1, 0.0)


def win_out_of_range(source: str) -> str | None:
    """Winning pays more than the top of the range (only on the win step)."""
    return _edit_wins(source, 1, 1.5)


class _NoCap(ast.NodeTransformer):
    def __init__(self) -> None:
        self.changed = False

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        if _mentions(node, _CAP_WORDS):
            self.changed = True
            return ast.Constant(False)
        return self.generic_visit(node)


def no_turn_cap(source: str) -> str | None:
    """The turn cap is never checked: the episode goes on forever."""
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    fixer = _NoCap()
    for fn in _methods(cls):
        if fn.name not in ("__init__", "reset", "solution"):
            fixer.visit(fn)
    return _out(tree) if fixer.changed else None


def late_crash(source: str) -> str | None:
    """The environment crashes once an episode passes 20 steps."""
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    reset, step = method(cls, "reset"), method(cls, "step")
    if reset is None or step is None:
        return None
    reset.body.insert(0, _stmts("self._mut_steps = 0")[0])
    step.body[0:0] = _stmts(
        "self._mut_steps = self._mut_steps + 1\n"
        "if self._mut_steps > 20:\n"
        "    raise RuntimeError('history buffer overflow')\n"
    )
    return _out(tree)


def garbage_paid(source: str) -> str | None:
    """An invalid action earns 0.3 (below the old single-step garbage bar)."""
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    changed = False
    for fn in _methods(cls):
        if fn.name in ("reset", "solution", "__init__"):
            continue
        for ret in _tuple_returns(fn):
            elts = ret.value.elts  # type: ignore[union-attr]
            reward = _number(elts[1])
            said = _text_of(elts[0]).lower()
            if reward is not None and reward <= 0 and any(w in said for w in _INVALID_WORDS):
                elts[1] = ast.Constant(0.3)
                changed = True
    return _out(tree) if changed else None


class _FixedSeed(ast.NodeTransformer):
    def __init__(self) -> None:
        self.changed = False

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
        if name in ("Random", "seed") and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "seed":
            node.args[0] = ast.Constant(12345)
            self.changed = True
        return node


def ignores_seed(source: str) -> str | None:
    """``reset(seed)`` draws from a fixed seed: every seed gives the same game."""
    parsed = _parse(source)
    if parsed is None or (reset := method(parsed[1], "reset")) is None:
        return None
    fixer = _FixedSeed()
    fixer.visit(reset)
    return _out(parsed[0]) if fixer.changed else None


def _state_leak(source: str, prefer: tuple[str, ...]) -> str | None:
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    init, reset, step = method(cls, "__init__"), method(cls, "reset"), method(cls, "step")
    if init is None or reset is None or step is None:
        return None
    in_init = set(_self_assigned(init))
    in_step = set(_self_assigned(step)) | {a for fn in _methods(cls) if fn.name not in ("reset", "__init__") for a in _self_assigned(fn)}
    # mutated in place (history.append) counts as a write
    for fn in _methods(cls):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "add", "extend", "update", "pop", "insert"):
                target = node.func.value
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    in_step.add(target.attr)
    for word in prefer:
        for i, stmt in enumerate(reset.body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                t = stmt.targets[0]
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        and word in t.attr.lower() and t.attr in in_init and t.attr in in_step):
                    del reset.body[i]
                    return _out(tree)
    return None


def state_leak_done(source: str) -> str | None:
    """``reset`` forgets to clear the end-of-episode flag."""
    return _state_leak(source, ("done", "over", "finished", "ended"))


def state_leak_counter(source: str) -> str | None:
    """``reset`` forgets to clear the turn counter or the history."""
    return _state_leak(source, ("turn", "history", "step", "guesses", "moves", "log", "visited", "count"))


class _HashOrder(ast.NodeTransformer):
    def __init__(self) -> None:
        self.changed = False

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if (not self.changed and isinstance(node.func, ast.Attribute) and node.func.attr in ("choice", "sample", "shuffle")
                and node.args):
            arg = ast.unparse(node.args[0])
            if node.func.attr == "shuffle":
                return node
            node.args[0] = _expr(f"sorted({arg}, key=lambda v: hash(str(v)))")
            self.changed = True
        return node


def hash_order(source: str) -> str | None:
    """The game drawn at reset depends on the order of ``hash`` of strings (set order):
    the same seed gives another game in another process."""
    parsed = _parse(source)
    if parsed is None or (reset := method(parsed[1], "reset")) is None:
        return None
    fixer = _HashOrder()
    fixer.visit(reset)
    if not fixer.changed:
        for fn in _methods(parsed[1]):
            if fn.name not in ("solution", "step"):
                fixer.visit(fn)
    return _out(parsed[0]) if fixer.changed else None


def without_solution(source: str) -> str | None:
    """The same environment with its ``solution()`` removed."""
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, cls = parsed
    sol = method(cls, "solution")
    if sol is None:
        return None
    cls.body.remove(sol)
    if not cls.body:
        cls.body.append(ast.Pass())
    return _out(tree)


#: Class of defect -> its operators.
CLASSES: dict[str, tuple[Operator, ...]] = {
    "answer_in_observation": (leak_at_reset, leak_on_second_step),
    "step_after_end": (after_end_pays_again, after_end_unterminates, after_end_unguarded),
    "win_off_by_one": (win_off_by_one,),
    "win_not_terminated": (win_not_terminated,),
    "win_unpaid": (win_unpaid,),
    "win_out_of_range": (win_out_of_range,),
    "no_turn_cap": (no_turn_cap,),
    "late_crash": (late_crash,),
    "garbage_paid": (garbage_paid,),
    "ignores_seed": (ignores_seed,),
    "state_across_resets": (state_leak_done, state_leak_counter),
    "hash_order": (hash_order,),
}

#: Classes also applied to the parent without ``solution()`` (the defect must be found
#: without a reference to replay).
WITHOUT_SOLUTION = ("win_off_by_one", "win_not_terminated", "win_unpaid", "win_out_of_range", "no_turn_cap",
                    "garbage_paid", "ignores_seed", "state_across_resets", "step_after_end", "late_crash",
                    "hash_order")


def mutants(source: str) -> Iterator[tuple[str, str, bool, str]]:
    """``(class, operator name, with_solution, mutant source)`` for every operator that
    applies to ``source``, with and (for :data:`WITHOUT_SOLUTION`) without ``solution()``
    (the operator applied first: it may read ``solution()`` to find the secret)."""
    for klass, operators in CLASSES.items():
        for op in operators:
            out = op(source)
            if out is None:
                continue
            yield klass, op.__name__, True, out
            if klass in WITHOUT_SOLUTION and (bare := without_solution(out)) is not None:
                yield klass, op.__name__, False, bare
