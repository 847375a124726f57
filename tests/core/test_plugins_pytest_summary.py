"""The pytest plugin's failures say what failed in their first line, so pytest's short
summary reads ``FAILED ... - Failed: bad_env rejected at stage fuzz: step_exception ...`` (it read
``Failed: ╭─────...``, the first line of the rendered report, before)."""

from __future__ import annotations

pytest_plugins = ["pytester"]

RAISES_ON_GARBAGE = '''
import random


class PickyEnv:
    """Guess a digit; anything but a boxed digit crashes."""

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(0, 9)
        self.turns = 0
        self.done = False
        return "Guess a digit 0-9 as \\\\boxed{D}.", {}

    def step(self, action):
        if self.done:
            return "Over.", 0.0, True, False, {}
        self.turns += 1
        guess = int(action.strip()[7:-1])
        self.done = guess == self.secret or self.turns >= 12
        return ("right" if guess == self.secret else "higher" if guess < self.secret else "lower",
                float(guess == self.secret), guess == self.secret, self.turns >= 12 and guess != self.secret, {})

    def solution(self):
        return ["\\\\boxed{%d}" % self.secret]
'''


def test_a_rejected_environment_is_named_with_its_stage_and_reason_in_the_short_summary(pytester):
    pytester.makepyfile(
        bad_env=RAISES_ON_GARBAGE,
        test_envs='''
import pathlib

def test_bad(spade_fuzz):
    spade_fuzz.source(pathlib.Path(__file__).with_name("bad_env.py").read_text(), label="bad_env")
''',
    )
    result = pytester.runpytest_subprocess("--spade-examples", "20", "-ra", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED test_envs.py::test_bad - Failed: bad_env rejected at stage fuzz: *"])
    summary = [line for line in result.stdout.lines if line.startswith("FAILED")]
    assert len(summary) == 1 and "╭" not in summary[0]
    result.stdout.fnmatch_lines(["*bad_env: REJECTED at fuzz*"])  # the whole report is still shown above
