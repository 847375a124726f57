"""``from math_verify import parse, verify`` in environment code: the games domain allows
it, and the sandbox hands out its facade, whose parsed answers are opaque (the library's
sympy expressions turn strings into code)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("math_verify")

from spade_core.app.cli import build_app
from spade_core.metadata import ValidationReport
from spade_core.plugins import get_plugins
from spade_sandbox.facades import math_verify as facade
from typer.testing import CliRunner

from spade_sandbox import SandboxPool

DRILL_ENV = '''
"""Three fractions to write in lowest terms, one at a time; answers checked with math_verify."""
import random
import re
from math_verify import parse, verify


class FractionDrillEnv:
    def __init__(self):
        self.max_turns = 8

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.items = []
        for _ in range(3):
            k = rng.randint(2, 9)
            self.items.append((rng.randint(1, 9) * k, rng.randint(10, 19) * k))
        self.index, self.turn = 0, 0
        return self._ask(), {}

    def _ask(self):
        n, d = self.items[self.index]
        return f"Fraction {self.index + 1} of 3: what is {n}/{d}? Answer as \\\\boxed{{p/q}} in lowest terms."

    def step(self, action):
        self.turn += 1
        n, d = self.items[self.index]
        # a short boxed fraction only: parsing long free text with sympy can outlast a step's time limit
        m = re.findall(r"\\\\boxed\\{\\s*(\\d{1,4}\\s*/\\s*\\d{1,4})\\s*\\}", action)
        right = bool(m) and verify(parse(f"${n}/{d}$"), parse(f"${m[-1]}$"))
        if right:
            self.index += 1
            if self.index == len(self.items):
                return "All three right.", 1.0, True, False, {}
            return "Right. " + self._ask(), 0.1, False, False, {}
        truncated = self.turn >= self.max_turns
        return f"Not {n}/{d}. " + self._ask(), 0.0, False, truncated, {}

    def solution(self):
        import math
        out = []
        for n, d in self.items[self.index:]:
            g = math.gcd(n, d)
            out.append("\\\\boxed{%d/%d}" % (n // g, d // g))
        return out
'''

PROBE_ENV = '''
from math_verify import parse, verify
import math_verify


class ProbeEnv:
    def reset(self, seed=None):
        return "probe", {}

    def step(self, action):
        found = []
        p = parse("$x + 1$")
        found.append(type(p[0]).__name__)
        found.append(",".join(n for n in ("parser", "grader", "utils", "metric", "_real") if n in dir(math_verify)) or "-")
        try:
            verify(p, [1])
            found.append("list accepted")
        except TypeError:
            found.append("list refused")
        found.append(str(verify(parse("$\\\\frac{1}{2}$"), parse("0.5"))))
        return " ".join(found), 0.0, True, False, {}
'''


def test_the_games_domain_allows_math_verify():
    assert "math_verify" in get_plugins().domain("games").allowed_modules


def test_a_reference_environment_importing_math_verify_validates(tmp_path: Path):
    path = tmp_path / "fraction_drill.py"
    path.write_text(DRILL_ENV)
    result = CliRunner().invoke(build_app(), ["validate", str(path), "--domain", "games", "--json"])
    assert result.exit_code == 0, result.output
    report = ValidationReport.model_validate_json(result.stdout)
    assert report.passed and report.failed_stage is None and report.feasibility_proven


def test_it_plays_in_the_sandbox_and_its_answers_are_checked():
    with SandboxPool() as pool:
        h = pool.spawn(DRILL_ENV, allowed_modules=["math_verify"])
        obs, _ = pool.reset(h, seed=3)
        assert "Fraction 1 of 3" in obs
        obs, reward, terminated, *_ = pool.step(h, "\\boxed{0}")
        assert (reward, terminated) == (0.0, False) and obs.startswith("Not")
        for action in pool.call(h, "solution"):
            obs, reward, terminated, *_ = pool.step(h, action)
        assert (obs, reward, terminated) == ("All three right.", 1.0, True)


def test_environment_code_sees_only_the_facade():
    with SandboxPool() as pool:
        h = pool.spawn(PROBE_ENV, allowed_modules=["math_verify"])
        pool.reset(h, seed=0)
        obs = pool.step(h, "go")[0]
    # parsed answers are their text; no submodule of the library; verify takes only parse's results
    assert obs == "str - list refused True"


def test_why_the_facade_the_real_librarys_expressions_evaluate_strings():
    """If this starts failing, sympy no longer evaluates strings there; the facade stays
    harmless either way."""
    from math_verify import parse

    key = "SPADE_MATH_VERIFY_PROBE"
    try:
        parse("$x + 1$")[0].equals(f"__import__('os').environ.setdefault('{key}', 'reached') and 0")
        assert os.environ.get(key) == "reached"
    finally:
        os.environ.pop(key, None)
    assert list(facade.parse("$x + 1$")) and all(isinstance(t, str) for t in facade.parse("$x + 1$"))


def test_a_source_that_never_names_it_does_not_make_the_zygote_import_it():
    """The games domain allows math_verify for all its environments; only a source that
    imports it makes the zygote import sympy (about 50 MiB there), which every worker forked
    afterwards carries."""
    import psutil

    plain = DRILL_ENV.replace("from math_verify import parse, verify", "").replace("math_verify", "a checker")
    with SandboxPool() as pool:
        h = pool.spawn(plain, allowed_modules=["math_verify"])
        zygote = psutil.Process(pool.worker_of(h).pid).parent()
        before = zygote.memory_info().rss
        pool.spawn(DRILL_ENV, allowed_modules=["math_verify"])
        after = zygote.memory_info().rss
    assert after - before > 20 * 2**20, (before, after)
