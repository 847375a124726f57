"""Sound: the reward range is declared on a helper base class in the same file and
inherited, like any attribute; illegal moves cost -1."""


class BoardGameBase:
    reward_range = (-1.0, 1.0)

    def legal(self, n):
        return 1 <= n <= 3


class TakeAwayEnv(BoardGameBase):
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.pile = rng.choice([5, 6, 7, 9, 10, 11])
        self.turn = 0
        return f"A pile of {self.pile} stones. Take 1-3 with \\boxed{{N}}; I answer. Whoever takes the last stone wins.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{\s*(\d)\s*\}", action)
        if not m or not self.legal(int(m[-1])) or int(m[-1]) > self.pile:
            return f"Illegal move. {self.pile} stones left.", -1.0, False, self.turn >= 12, {}
        self.pile -= int(m[-1])
        if self.pile == 0:
            return "You took the last stone: you win.", 1.0, True, False, {}
        mine = self.pile % 4 or 1
        self.pile -= mine
        if self.pile == 0:
            return f"I take {mine}, the last one: I win.", 0.0, True, False, {}
        return f"I take {mine}. {self.pile} stones left.", 0.0, False, self.turn >= 12, {}

    def solution(self):
        moves, pile = [], self.pile
        while pile:
            take = pile % 4
            moves.append("\\boxed{%d}" % take)
            pile -= take
            if pile:
                pile -= pile % 4 or 1
        return moves

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
