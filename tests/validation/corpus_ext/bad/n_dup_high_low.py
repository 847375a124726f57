"""Broken: a near-duplicate of ref_high_low with the names changed and comments added;
the novelty stage names its twin."""


class HotColdEnv:
    def __init__(self):
        self.max_turns = 12

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.hidden = self.rng.randint(1, 100)
        self.moves = 0
        self.finished = False
        return "I picked a number from 1 to 100. Guess it with \\boxed{N}; I say higher or lower.", {}

    def step(self, action):
        if self.finished:
            return "The game is over.", 0.0, True, False, {}
        self.moves += 1
        self.finished = self.moves >= self.max_turns
        found = re.findall(r"\\boxed\{\s*(\d{1,3})\s*\}", action)
        if not found:
            return "Please answer like \\boxed{50}.", 0.0, False, self.finished, {}
        attempt = int(found[-1])
        if attempt == self.hidden:
            self.finished = True
            return f"{attempt} is right!", 1.0, True, False, {}
        direction = "higher" if attempt < self.hidden else "lower"
        return f"{attempt}: go {direction}.", 0.0, False, self.finished, {}

    def solution(self):
        lo, hi, moves = 1, 100, []
        while True:
            mid = (lo + hi) // 2
            moves.append("\\boxed{%d}" % mid)
            if mid == self.hidden:
                return moves
            if mid < self.hidden:
                lo = mid + 1
            else:
                hi = mid - 1
