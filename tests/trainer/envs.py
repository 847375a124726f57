"""Small trusted environments (reference format) used by the trainer tests."""

GUESS_ENV = '''
import random

class GuessEnv:
    """Guess a number in [1, 4]; the hint names it."""

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.target = self.rng.randint(1, 4)
        self.turns = 0
        return "Guess a number from 1 to 4.", {}

    def step(self, action):
        self.turns += 1
        text = action.replace("\\\\boxed{", "").replace("}", "").strip()
        if text == str(self.target):
            return "Correct!", 1.0, True, False, {}
        if self.turns >= 3:
            return "Out of guesses.", 0.0, True, False, {}
        return "Wrong, try again.", 0.0, False, False, {}

    def solution(self):
        return ["\\\\boxed{%d}" % self.target]

    def close(self):
        pass
'''

ENDLESS_ENV = '''
class EndlessEnv:
    def reset(self, seed=None):
        return "Say anything.", {}

    def step(self, action):
        return "Again.", 0.1, False, False, {}

    def solution(self):
        return []
'''
