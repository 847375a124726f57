"""Verdicts on meaning, one check at a time, through the real sandbox: a small sound game
passes, and each one-line change of it that breaks what "admitted" promises is rejected
at its stage with its reason code and a replay.

The game: guess a hidden number 10..99, told higher or lower, with an end state. Each test
replaces one marked line (``SOUND``) by its defect.
"""

from __future__ import annotations

import pytest
from spade_core.metadata import EnvMetadata
from spade_designer.validation import ValidationConfig, Validator

SOUND = '''
import random
import re


class HiLoEnv:
    def __init__(self):
        self.max_turns = 8
        self.secret, self.turn, self.done = 0, 0, False

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(10, 99)  # SEED
        self.turn, self.done = 0, False  # RESET
        return "Guess my number from 10 to 99 with \\\\boxed{N}. I say higher or lower.", {}  # INTRO

    def step(self, action):
        if self.done:  # GUARD
            return "The game is over.", 0.0, True, False, {}  # AFTER
        self.turn += 1
        found = re.findall(r"\\\\boxed\\{\\s*(\\d+)\\s*\\}", action)
        if not found:
            self.done = self.turn >= self.max_turns  # CAP
            return "Reply like \\\\boxed{50}.", 0.0, False, self.done, {}  # GARBAGE
        guess = int(found[-1])
        if guess == self.secret:
            self.done = True
            return f"{guess} is right!", 1.0, True, False, {}  # WIN
        self.done = self.turn >= self.max_turns  # CAP2
        way = "higher" if guess < self.secret else "lower"
        return f"{guess}: go {way}.", 0.0, False, self.done, {}

    def solution(self):
        lo, hi, moves = 10, 99, []
        while True:
            mid = (lo + hi) // 2
            moves.append("\\\\boxed{%d}" % mid)
            if mid == self.secret:
                return moves
            lo, hi = (mid + 1, hi) if mid < self.secret else (lo, mid - 1)
'''


def variant(marker: str, line: str | None) -> str:
    """``SOUND`` with the line marked ``# MARKER`` replaced by ``line`` (same indentation),
    or removed when ``line`` is None."""
    out = []
    for text in SOUND.splitlines():
        if text.rstrip().endswith(f"# {marker}"):
            if line is not None:
                out.append(text[: len(text) - len(text.lstrip())] + line)
            continue
        out.append(text)
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def validator():
    with Validator(config=ValidationConfig()) as v:
        yield v


def rejected(report):
    assert not report.passed, "admitted"
    failing = next(f for f in report.findings if not f.ok)
    return report.failed_stage, failing.code, failing


def test_the_sound_game_passes_proven(validator):
    report = validator.validate(SOUND)
    assert report.passed and report.feasibility_proven, report.reasons


# --- a step after the end -----------------------------------------------------------------


def test_paying_again_after_the_win_is_rejected_with_the_replay(validator):
    stage, code, f = rejected(validator.validate(variant("AFTER", 'return "Again!", 1.0, True, False, {}')))
    assert code == "step_after_end" and "paid 1.0 again" in f.message and f.actions


def test_going_on_after_the_end_is_rejected(validator):
    stage, code, f = rejected(validator.validate(variant("GUARD", "if False:")))
    assert code == "step_after_end"


def test_raising_after_the_end_is_a_fine_answer(validator):
    report = validator.validate(variant("AFTER", 'raise RuntimeError("the game is over")'))
    assert report.passed, report.reasons


# --- the winning path -----------------------------------------------------------------------


def test_a_win_that_never_ends_the_episode_is_rejected_before_anything_runs(validator):
    source = variant("WIN", 'return f"{guess} is right!", 1.0, False, False, {}')
    assert rejected(validator.validate(source))[:2] == ("static", "win_not_terminated")


def test_a_win_computed_without_termination_is_rejected_by_the_replay(validator):
    source = variant("WIN", 'return f"{guess} is right!", float(self.turn > 0), self.turn < 0, False, {}')
    assert rejected(validator.validate(source))[:2] == ("feasibility", "win_not_terminated")


def test_a_win_paid_out_of_range_only_on_the_win_step_is_rejected_without_a_solution(validator):
    source = variant("WIN", 'return f"{guess} is right!", 1.5, True, False, {}')
    bare = source[: source.index("    def solution(self):")]
    assert rejected(validator.validate(bare))[:2] == ("static", "reward_out_of_range")


def test_a_win_found_while_fuzzing_proves_feasibility_without_solution():
    bare = SOUND[: SOUND.index("    def solution(self):")]
    # every answer 10..99 is tried by some episode when the range is this small
    small = bare.replace("randint(10, 99)", "randint(1, 3)").replace("from 10 to 99", "from 1 to 3")
    with Validator(config=ValidationConfig()) as v:
        report = v.validate(small)
    assert report.passed and report.feasibility_proven, report.reasons
    proof = next(f for f in report.findings if f.stage == "feasibility" and "search" in f.message)
    assert proof.actions and proof.seed is not None


# --- answers in the observation ---------------------------------------------------------------


def test_an_answer_printed_at_reset_is_rejected(validator):
    leak = 'return f"Guess my number (debug: {self.secret}) with \\\\boxed{{N}}.", {}'
    stage, code, f = rejected(validator.validate(variant("INTRO", leak)))
    assert (stage, code) == ("degenerate", "answer_leak") and "debug" in f.message


def test_an_answer_printed_after_a_garbage_action_is_rejected(validator):
    leak = 'return f"Reply like \\\\boxed{{50}}. (it is {self.secret})", 0.0, False, self.done, {}'
    assert rejected(validator.validate(variant("GARBAGE", leak)))[1] == "answer_leak"


def test_listing_the_answer_among_other_candidates_is_not_a_leak(validator):
    listed = ('return "Pick one of " + ", ".join(str(n) for n in sorted({self.secret, (self.secret * 7) % 90 + 10, '
              '(self.secret * 13) % 90 + 10})) + " with \\\\boxed{N}; I say higher or lower.", {}')
    report = validator.validate(variant("INTRO", listed))
    assert report.passed, report.reasons


# --- seeds, gameability, processes, resets ------------------------------------------------------


def test_a_game_that_ignores_its_seed_is_rejected_unless_declared_fixed(validator):
    fixed = variant("SEED", "self.secret = random.Random(7).randint(10, 99)")
    assert rejected(validator.validate(fixed))[1] == "ignores_seed"
    # declared (metadata, or a class attribute for a bare file), the seed is not asked to
    # vary; a fixed guessing game is then solved by repeating its answer: gameable
    meta = EnvMetadata(name="hilo", domain="test", skill="test", fixed_instance=True)
    assert rejected(validator.validate(fixed, metadata=meta))[1] == "gameable"
    declared = fixed.replace("class HiLoEnv:\n", "class HiLoEnv:\n    fixed_instance = True\n")
    assert rejected(validator.validate(declared))[1] == "gameable"


def test_garbage_that_is_paid_a_little_every_step_is_gameable(validator):
    paid = 'return "Reply like \\\\boxed{50}.", 0.2, False, self.done, {}'
    stage, code, f = rejected(validator.validate(variant("GARBAGE", paid)))
    assert (stage, code) == ("degenerate", "gameable") and "garbage" in f.message


def test_a_game_one_repeated_action_wins_is_gameable(validator):
    always = variant("SEED", "self.secret = 10 + (seed or 0) % 1")
    always = always.replace("class HiLoEnv:\n", "class HiLoEnv:\n    fixed_instance = True\n")
    assert rejected(validator.validate(always))[1] in ("gameable", "reward_hacking")


def test_a_game_drawn_in_set_order_of_strings_differs_in_another_process(validator):
    hashed = ('self.secret = 10 + sorted(set(map(str, range(90))), key=hash).index('
              'str(random.Random(seed).randint(0, 89)))')
    stage, code, _f = rejected(validator.validate(variant("SEED", hashed)))
    assert (stage, code) == ("determinism", "process_dependent")


def test_a_validator_nobody_closes_takes_its_second_pool_with_it():
    """The second pool (another process, another hash seed) is the validator's own: when an
    unclosed validator is collected, that pool's zygote and workers end with it."""
    import gc

    import psutil

    from spade_sandbox import SandboxPool

    with SandboxPool() as pool:
        v = Validator(pool)
        alternate = v.alternate_pool()
        assert alternate is not None and alternate is not pool
        alternate.spawn(SOUND)  # its zygote and a worker run now
        mine = {p.pid for p in psutil.Process().children(recursive=True)}
        del v
        gc.collect()
        left = {p.pid for p in psutil.Process().children(recursive=True)}
        assert alternate.closed and len(left) < len(mine)


def test_a_reset_that_forgets_the_end_is_state_across_resets(validator):
    stage, code, _f = rejected(validator.validate(variant("RESET", "self.turn = 0")))
    assert (stage, code) == ("determinism", "state_across_resets")


def test_a_missing_turn_cap_on_well_formed_moves_exceeds_max_turns(validator):
    source = variant("CAP2", "self.done = False")
    assert rejected(validator.validate(source))[1] == "exceeds_max_turns"
