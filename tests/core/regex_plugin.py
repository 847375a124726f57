"""A domain plugin kept outside the project, written as an author would: the ``regexes``
domain (a helper module, a fuzz strategy, seeds with knobs), installed as a real
distribution in a temporary folder, with every seed mistake an author makes on purpose.

:func:`install` writes the packages and their ``.dist-info`` (entry points in group
``spade``) under a folder that goes on ``sys.path`` / ``PYTHONPATH``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

HELPERS = '''
"""Pure helpers the regexes environments import (allowed to the domain's code)."""

import re


def full_match(pattern, text):
    """True / False, or None when ``pattern`` is not a regular expression."""
    try:
        return re.fullmatch(pattern, text) is not None
    except (re.error, OverflowError, RecursionError):  # not a pattern, or one too large to compile
        return None


def boxed(action):
    start = action.rfind("\\\\boxed{")
    if start < 0 or not action.endswith("}"):
        return None
    return action[start + 7:-1]
'''

#: A regex-writing game: find a pattern that matches the hidden positives and none of the
#: negatives; the words are revealed by testing patterns. ``{bug}`` is replaced by a line
#: that breaks it for one input only.
MATCH_ENV = '''
import random

from tmp_spade_regex.helpers import boxed, full_match

WORDS = ["cat", "cart", "care", "core", "cure", "dog", "dot", "door", "bat", "bar", "aaaa", "aab"]


class RegexMatchEnv:
    """Write a regex that matches every hidden positive word and no negative one."""

    POSITIVES = 2
    KNOBS = {"POSITIVES": (int, 1, 4)}
    HARDER = {"POSITIVES": "higher"}

    def reset(self, seed=None):
        rng = random.Random(seed)
        words = rng.sample(WORDS, 6)
        self.positives = words[: self.POSITIVES]
        self.negatives = words[self.POSITIVES:]
        self.turns = 0
        self.done = False
        return ("Find a pattern matching the hidden positive words and no negative one. Test one with "
                "\\\\boxed{PATTERN}; you are told which words it matches."), {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turns += 1
        observation, reward, won = self.play(boxed(action) if isinstance(action, str) else None)
        truncated = not won and self.turns >= 8
        self.done = won or truncated
        return observation, reward, won, truncated, {}

    def play(self, pattern):
        if pattern is None:
            return "Write \\boxed{PATTERN}.", 0.0, False
{bug}
        if full_match(pattern, "") is None:
            return "Not a regular expression.", 0.0, False
        hits = [w for w in self.positives + self.negatives if full_match(pattern, w)]
        good = sum(w in self.positives for w in hits)
        bad = sum(w in self.negatives for w in hits)
        if good == len(self.positives) and bad == 0:
            return "Exactly right.", 1.0, True
        return f"It matches: {', '.join(hits) or 'nothing'}", 0.5 * good / len(self.positives), False

    def solution(self):
        return ["\\\\boxed{" + "|".join(self.positives) + "}"]

    def close(self):
        pass
'''

SOUND = "        pass"
#: Pays 1.5 (computed, so no reading of the source sees it) for one pathological pattern
#: only: the fuzz strategy lists it among many.
OUT_OF_RANGE = '''        if pattern == "(a+)+$":
            return "Catastrophic.", len(pattern) / 4, False'''
#: Hangs on one command (the deadline test).
HANGS = '''        if pattern == "hang":
            while True:
                pass'''

FUZZ = '''
"""Plausible patterns, near-misses and one pathological pattern."""

PATTERNS = ["cat", "ca.*", "c.r.", "d.*", "(cat|dog)", "[cd]o.*", "b.r", ".*", "", "(", "[a-", "a{2,}",
            "x?y*", "door|dot", "c(a|o)re", "\\\\w+", "^$", "b?a+t", "(a+)+$", "(ab)*"]


def actions():
    from hypothesis import strategies as st

    return st.sampled_from(PATTERNS).map(lambda p: "\\\\boxed{" + p + "}")
'''

PLUGIN = '''
from pathlib import Path

from spade_core.domains import ActionFormat, Domain, SeedEnv
from spade_core.hookspecs import hookimpl

from .fuzz import actions

ENVS = Path(__file__).parent / "envs"
SKILLS = ("pattern_writing",)


def seed(name, file="regex_match.py", **fields):
    fields.setdefault("skill", "pattern_writing")
    fields.setdefault("max_turns", 8)
    return SeedEnv(name=name, path=ENVS / file, **fields)


@hookimpl
def spade_register_domains(register):
    register(Domain(
        name="regexes",
        description="Regular expressions written from examples.",
        skills=SKILLS,
        prompt_spec="Write regex games.",
        action_format=ActionFormat.boxed,
        allowed_modules=frozenset({"tmp_spade_regex.helpers"}),
        fuzz_strategy=actions,
        seed_envs=(
            seed("regex_match", difficulty=0.3, hint="Test one word at a time."),
            seed("regex_bad_reward", file="regex_bad_reward.py"),
            seed("regex_hang", file="regex_hang.py"),
            seed("regex match!"),
            seed("regex_hard", difficulty=3.0),
            seed("regex_zero", max_turns=0),
            seed("regex_typo", dificulty=0.5),
            seed("regex_skill", skill="juggling"),
            seed("regex_missing", file="nowhere.py"),
            seed("regex_class", class_name="NoSuchEnv"),
            seed("regex_twin"),
            seed("regex_twin"),
            seed("shared_name"),
        ),
    ))
    register(Domain(
        name="regex_fmt",
        description="A domain whose action format is misspelt.",
        skills=SKILLS,
        prompt_spec="-",
        action_format="boxd",
        seed_envs=(seed("regex_fmt_seed"),),
    ))
'''

OTHER_PLUGIN = '''
from pathlib import Path

from spade_core.domains import Domain, SeedEnv
from spade_core.hookspecs import hookimpl

HERE = Path(__file__).parent


@hookimpl
def spade_register_domains(register):
    register(Domain(
        name="other", description="another plugin", skills=("counting",), prompt_spec="-",
        seed_envs=(SeedEnv(name="shared_name", skill="counting", path=HERE / "count.py"),
                   SeedEnv(name="other_count", skill="counting", path=HERE / "count.py")),
    ))
'''

COUNT_ENV = '''
class CountEnv:
    def reset(self, seed=None):
        self.n = 0
        return "Count to 2 with \\\\boxed{up}.", {}

    def step(self, action):
        self.n += 1
        return str(self.n), float(self.n >= 2), self.n >= 2, False, {}

    def solution(self):
        return ["\\\\boxed{up}", "\\\\boxed{up}"]
'''

#: What ``SpadePlugins.problems()`` reports: (plugin, domain, seed, text every line holds).
EXPECTED = [
    ("regexes", "regexes", "regex match!", "name = 'regex match!': a letter, then letters, digits"),
    ("regexes", "regexes", "regex_hard", "difficulty = 3.0: a number from 0 (easiest) to 1 (hardest), or None"),
    ("regexes", "regexes", "regex_zero", "max_turns = 0: a whole number from 1 to 10000"),
    ("regexes", "regexes", "regex_typo", "dificulty = 0.5: not a SeedEnv field (did you mean 'difficulty'?)"),
    ("regexes", "regexes", "regex_skill", "skill = 'juggling': one of the domain's skills: pattern_writing"),
    ("regexes", "regexes", "regex_missing", "nowhere.py'"),
    ("regexes", "regexes", "regex_class", "class_name = 'NoSuchEnv': a class defined at the top level of "
                                           "regex_match.py: RegexMatchEnv"),
    ("regexes", "regexes", "regex_twin", "name = 'regex_twin': a name no other seed has; 2 seeds have it"),
    ("regexes", "regexes", "regex_twin", "name = 'regex_twin': a name no other seed has; 2 seeds have it"),
    ("regexes", "regexes", "shared_name", "name = 'shared_name': a name no other seed has; 2 seeds have it "
                                          "(plugin 'other' domain 'other', plugin 'regexes' domain 'regexes')"),
    ("other", "other", "shared_name", "name = 'shared_name': a name no other seed has; 2 seeds have it"),
    ("regexes", "regex_fmt", None, "action_format = 'boxd': one of ActionFormat.boxed, ActionFormat.tool_call"),
    ("regexes", "regex_fmt", "regex_fmt_seed", "not registered: its domain is wrong"),
]
#: Seeds that register, whatever the others got wrong.
GOOD = {"regex_match", "regex_bad_reward", "regex_hang", "other_count"}


def _dist(site: Path, dist: str, package: str, entry: str) -> None:
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[spade]\n{entry} = {package}.plugin\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")


def install(site: Path) -> Path:
    """Write both plugins (``regexes`` and ``other``) as installed distributions under
    ``site``; return the regexes package's folder."""
    pkg = site / "tmp_spade_regex"
    (pkg / "envs").mkdir(parents=True)
    files = {
        pkg / "__init__.py": "",
        pkg / "helpers.py": HELPERS,
        pkg / "fuzz.py": FUZZ,
        pkg / "plugin.py": PLUGIN,
        pkg / "envs" / "regex_match.py": MATCH_ENV.replace("{bug}", SOUND),
        pkg / "envs" / "regex_bad_reward.py": MATCH_ENV.replace("{bug}", OUT_OF_RANGE),
        pkg / "envs" / "regex_hang.py": MATCH_ENV.replace("{bug}", HANGS),
    }
    other = site / "tmp_spade_other"
    other.mkdir()
    files.update({other / "__init__.py": "", other / "plugin.py": OTHER_PLUGIN, other / "count.py": COUNT_ENV})
    for path, text in files.items():
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    _dist(site, "spade-regexes", "tmp_spade_regex", "regexes")
    _dist(site, "spade-other", "tmp_spade_other", "other")
    return pkg
