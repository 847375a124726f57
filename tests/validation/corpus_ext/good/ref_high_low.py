"""Sound, reference style: a higher/lower guessing game that uses ``random`` and ``re``
without importing them (the reference loader provides both)."""


class HighLowEnv:
    def __init__(self):
        self.max_turns = 12

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.secret = self.rng.randint(1, 100)
        self.turn = 0
        self.done = False
        return "I picked a number from 1 to 100. Guess it with \\boxed{N}; I say higher or lower.", {}

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        self.done = self.turn >= self.max_turns
        found = re.findall(r"\\boxed\{\s*(\d{1,3})\s*\}", action)
        if not found:
            return "Please answer like \\boxed{50}.", 0.0, False, self.done, {}
        guess = int(found[-1])
        if guess == self.secret:
            self.done = True
            return f"{guess} is right!", 1.0, True, False, {}
        hint = "higher" if guess < self.secret else "lower"
        return f"{guess}: go {hint}.", 0.0, False, self.done, {}

    def solution(self):
        lo, hi, moves = 1, 100, []
        while True:
            mid = (lo + hi) // 2
            moves.append("\\boxed{%d}" % mid)
            if mid == self.secret:
                return moves
            if mid < self.secret:
                lo = mid + 1
            else:
                hi = mid - 1
