"""Sound, a common reference habit: the module-level ``random`` reseeded in every
``reset(seed)``, then drawn from while the episode is built (deterministic per seed)."""


class TreasureGridEnv:
    def reset(self, seed=None):
        self.over = False
        random.seed(seed)
        self.size = 4
        self.treasure = (random.randrange(self.size), random.randrange(self.size))
        self.pos = (0, 0) if self.treasure != (0, 0) else (3, 3)
        self.turn = 0
        return self._view("Find the treasure on a 4x4 grid. Move with \\boxed{up|down|left|right}; I say warmer or colder."), {}

    def _dist(self, p):
        return abs(p[0] - self.treasure[0]) + abs(p[1] - self.treasure[1])

    def _view(self, head):
        return f"{head} You are at {self.pos}."

    def _play(self, action):
        self.turn += 1
        moves = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
        m = re.search(r"\\boxed\{\s*(up|down|left|right)\s*\}", action)
        if not m:
            return self._view("Unknown direction."), 0.0, False, self.turn >= 20, {}
        d = moves[m.group(1)]
        new = (min(max(self.pos[0] + d[0], 0), 3), min(max(self.pos[1] + d[1], 0), 3))
        before, self.pos = self._dist(self.pos), new
        if new == self.treasure:
            return self._view("Treasure!"), 1.0, True, False, {}
        word = "warmer" if self._dist(new) < before else "colder"
        return self._view(word.capitalize() + "."), 0.0, False, self.turn >= 20, {}

    def solution(self):
        (r, c), (tr, tc) = self.pos, self.treasure
        vert = ["\\boxed{down}"] * (tr - r) if tr > r else ["\\boxed{up}"] * (r - tr)
        horiz = ["\\boxed{right}"] * (tc - c) if tc > c else ["\\boxed{left}"] * (c - tc)
        return vert + horiz

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
