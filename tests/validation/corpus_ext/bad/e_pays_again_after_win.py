"""Broken, reference style: a higher/lower game with no end state. After the win, the
winning guess pays 1.0 again (and any other reply says the game goes on): whoever sums
rewards, or steps once more, is paid twice."""


class HighLowAgainEnv:
    def __init__(self):
        self.max_turns = 12

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.secret = self.rng.randint(1, 100)
        self.turn = 0
        return "I picked a number from 1 to 100. Guess it with \\boxed{N}; I say higher or lower.", {}

    def step(self, action):
        self.turn += 1
        found = re.findall(r"\\boxed\{\s*(\d{1,3})\s*\}", action)
        if not found:
            return "Please answer like \\boxed{50}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found[-1])
        if guess == self.secret:
            return f"{guess} is right!", 1.0, True, False, {}
        hint = "higher" if guess < self.secret else "lower"
        return f"{guess}: go {hint}.", 0.0, False, self.turn >= self.max_turns, {}

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
