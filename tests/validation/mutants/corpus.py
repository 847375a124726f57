"""The mutation corpus: parents (sound environments), their mutants (:mod:`.operators`),
and the check that keeps a mutant only where it behaves differently from its parent.

Parents are the games plugin's seed environments and environments written here in the
habits of environments written elsewhere (``tests/validation/corpus_ext/good``, the
boxed ones of ``tests/validation/corpus/good`` and ``parents/``). A mutant is compared with
its parent on one battery of episodes, in the real sandbox: the reset observation and
``solution()`` of three seeds, the parent's solution replayed with three steps after its
end, and long episodes of garbage, of one repeated command and of probes; a ``hash_order``
mutant is compared with itself in a second sandbox process (another hash seed). A mutant
that behaves the same is dropped (it is not a defect anyone could see), and so is a leak
mutant whose printed value is not its solution's answer (a state already shown).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .operators import mutants, without_solution

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SEEDS = (0, 1, 2)
#: Steps of the long episodes of the battery (past every parent's turn cap of 25).
LONG = 30


@dataclass(frozen=True)
class Parent:
    name: str
    source: str
    origin: str  # "seed game" | "written elsewhere"


@dataclass(frozen=True)
class Mutant:
    parent: str
    klass: str
    operator: str
    with_solution: bool
    source: str

    @property
    def name(self) -> str:
        return f"{self.parent}.{self.operator}{'' if self.with_solution else '.nosol'}"


def parents() -> list[Parent]:
    out = [
        Parent(p.stem, p.read_text(encoding="utf-8"), "seed game")
        for p in sorted((ROOT / "plugins/games/src/spade_games/envs").glob("*.py"))
    ]
    for folder in (ROOT / "tests/validation/corpus_ext/good", ROOT / "tests/validation/corpus/good", HERE / "parents"):
        for p in sorted(folder.glob("*.py")):
            text = p.read_text(encoding="utf-8")
            if "ToolUseBaseEnv" in text or "<tool_call>" in text or "unproven" in p.stem or "nosolution" in p.stem:
                continue  # tool use and solution-less parents: the operators target boxed games
            out.append(Parent(p.stem, text, "written elsewhere"))
    return out


def candidates(parent: Parent) -> Iterator[Mutant]:
    for klass, op, with_solution, source in mutants(parent.source):
        yield Mutant(parent.name, klass, op, with_solution, source)


# --- the behavioural check ------------------------------------------------------------------

_GARBAGE = ("hello", "\\boxed{}", "zzzz ~~~ 1234")


def _call(fn: Any, *args: Any) -> Any:
    try:
        out = fn(*args)
    except Exception as exc:
        return ("raised", type(exc).__name__)
    if isinstance(out, tuple):
        return tuple(round(x, 6) if isinstance(x, float) else x for x in out[:4])
    return out


def _after_end(result: Any) -> str:
    """A step after the end, as the contract judges it: raising or staying over unpaid is
    fine (what else it says does not matter), paying or going on is not."""
    if not (isinstance(result, tuple) and len(result) == 4):
        return "fine"  # refused
    _obs, reward, terminated, truncated = result
    if isinstance(reward, float | int) and reward > 0:
        return "pays again"
    return "fine" if terminated or truncated else "goes on"


def fingerprint(pool: Any, source: str, plan_source: str) -> list[Any]:
    """What the battery sees of ``source`` (the solution replayed is ``plan_source``'s)."""
    out: list[Any] = []
    try:
        env = pool.spawn(source)
        plan_env = pool.spawn(plan_source)
    except Exception as exc:
        return [("spawn", type(exc).__name__, str(exc)[:200])]
    try:
        for seed in SEEDS:
            out.append(_call(pool.reset, env, seed))
            out.append(_call(pool.call, env, "solution"))
            _call(pool.reset, plan_env, seed)
            plan = _call(pool.call, plan_env, "solution")
            actions = plan if isinstance(plan, list) else []
            if isinstance(plan, str):
                from spade_designer.validation.solutions import boxed_plan

                actions = boxed_plan(plan)
            out.append(_call(pool.reset, env, seed))
            ended = False
            for a in actions:
                r = _call(pool.step, env, a)
                out.append(r)
                if isinstance(r, tuple) and len(r) == 4 and (r[2] or r[3]):
                    ended = True
                    break
            if ended:
                for a in (actions[-1], *_GARBAGE[:2]):
                    out.append(_after_end(_call(pool.step, env, a)))
            first = actions[0] if actions else "\\boxed{1}"
            near = first.replace("1", "2") if "1" in first else first[:-1] + "9}" if first.endswith("}") else first
            for episode in ([_GARBAGE[i % 3] for i in range(LONG)], [near] * LONG,
                            [(f"\\boxed{{{i}}}", "\\boxed{look}", f"\\boxed{{guess {i}}}")[i % 3] for i in range(LONG)]):
                out.append(_call(pool.reset, env, seed))
                for a in episode:  # up to the end and one step after it (judged by its own rule)
                    r = _call(pool.step, env, a)
                    out.append(r)
                    if not (isinstance(r, tuple) and len(r) == 4) or r[2] or r[3]:
                        out.append(_after_end(_call(pool.step, env, a)))
                        break
    finally:
        for h in (env, plan_env):
            try:
                pool.close_env(h)
            except Exception:
                pass
    return out


_SHOWN = re.compile(r"\(debug: \w+=(.*?)\)$|the \w+ is (.*?)\.$", re.S)


def shows_an_answer(pool: Any, source: str) -> bool:
    """Whether the value a leak mutant prints is (part of) its solution's answer on seed 0:
    an attribute ``solution()`` reads may also be a state already shown (a row of lights)
    or what the answer is computed from (an amount to pay), which shows nothing secret."""
    from spade_designer.validation.leakage import payloads, tokens

    try:
        env = pool.spawn(source)
    except Exception:
        return False
    try:
        texts = [pool.reset(env, 0)[0]] + [pool.step(env, "hello")[0] for _ in range(2)]
        solution = pool.call(env, "solution")
    except Exception:
        return False
    finally:
        pool.close_env(env)
    shown = [m.group(1) or m.group(2) for t in texts if (m := _SHOWN.search(t.strip()))]
    answer = [t for p in payloads(solution) for t in tokens(p)] if solution else []
    for value in shown:
        run = tokens(value)
        if run and any(answer[i : i + len(run)] == run for i in range(len(answer) - len(run) + 1)):
            return True
    return False


def differs(mutant: Mutant, parent: Parent, pool: Any, other_pool: Any, cache: dict[Any, Any] | None = None) -> bool:
    """Whether ``mutant`` behaves differently from ``parent`` on the battery (for a
    ``hash_order`` mutant: from itself in another process). ``cache`` keeps the parents'
    fingerprints."""
    if mutant.klass == "hash_order":
        return fingerprint(pool, mutant.source, parent.source) != fingerprint(other_pool, mutant.source, parent.source)
    if mutant.klass == "answer_in_observation" and not shows_an_answer(pool, mutant.source):
        return False
    cache = {} if cache is None else cache
    key = (parent.name, mutant.with_solution)
    if key not in cache:
        base = parent.source if mutant.with_solution else (without_solution(parent.source) or parent.source)
        cache[key] = fingerprint(pool, base, parent.source)
    return fingerprint(pool, mutant.source, parent.source) != cache[key]


def build(per_class: int | None = None, seed: int = 0) -> tuple[list[Parent], list[Mutant]]:
    """Every parent and the mutants that differ from it: all of them, or ``per_class`` for
    each class and solution variant, drawn from the parents in a shuffled order (``seed``)
    so that a sample spreads over seed games and environments written elsewhere."""
    import random

    from spade_sandbox.launcher import SandboxLauncher

    ps = parents()
    pending: dict[tuple[str, bool], list[tuple[Parent, Mutant]]] = {}
    for parent in ps:
        for m in candidates(parent):
            pending.setdefault((m.klass, m.with_solution), []).append((parent, m))
    launcher = SandboxLauncher()
    pool, other = launcher.pool(), launcher.pool()
    kept: list[Mutant] = []
    cache: dict[Any, Any] = {}
    try:
        for key in sorted(pending):
            group = pending[key]
            random.Random(f"{seed}:{key}").shuffle(group)
            n = 0
            for parent, m in group:
                if per_class is not None and n >= per_class:
                    break
                if differs(m, parent, pool, other, cache):
                    kept.append(m)
                    n += 1
    finally:
        pool.close()
        other.close()
    return ps, kept


# --- scoring --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What ``spade validate FILE`` and ``spade fuzz FILE`` said of one environment."""

    name: str
    klass: str
    validate_rejected: bool
    fuzz_rejected: bool
    reason: str | None

    @property
    def rejected(self) -> bool:
        return self.validate_rejected or self.fuzz_rejected


def judge(items: list[tuple[str, str, str]], *, fuzz_examples: int = 200) -> list[Verdict]:
    """``(name, class, source)`` items validated and fuzzed as a file is (no metadata, no
    domain), through one sandbox pool."""
    from spade_designer.validation import ValidationConfig, Validator, fuzz
    from spade_designer.validation.pipeline import default_pool

    config = ValidationConfig()
    pool = default_pool(config)
    out = []
    try:
        with Validator(pool, config) as validator:
            for name, klass, source in items:
                v = validator.validate(source)
                f = fuzz(source, examples=fuzz_examples, pool=pool, config=config)
                failing = next((x for x in [*v.findings, *f.findings] if not x.ok), None)
                out.append(Verdict(name, klass, not v.passed, not f.passed, failing.code if failing else None))
    finally:
        pool.close()
    return out


def table(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """Per class: mutants, rejected by validate, by fuzz, by either, and the share."""
    rows: dict[str, dict[str, Any]] = {}
    for v in verdicts:
        row = rows.setdefault(v.klass, {"class": v.klass, "mutants": 0, "validate": 0, "fuzz": 0, "either": 0})
        row["mutants"] += 1
        row["validate"] += v.validate_rejected
        row["fuzz"] += v.fuzz_rejected
        row["either"] += v.rejected
    total = {"class": "all", "mutants": 0, "validate": 0, "fuzz": 0, "either": 0}
    for row in rows.values():
        for k in ("mutants", "validate", "fuzz", "either"):
            total[k] += row[k]
    out = [rows[k] for k in sorted(rows)] + [total]
    for row in out:
        row["score"] = row["either"] / row["mutants"] if row["mutants"] else 0.0
    return out
