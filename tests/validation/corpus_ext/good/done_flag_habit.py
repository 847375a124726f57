"""Sound: written with the old Gym habit of a ``self.done`` flag, but returning the
Gymnasium 5-tuple and a (str, dict) reset as the contract asks."""


class LanternEnv:
    def __init__(self):
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.lit = [rng.random() < 0.5 for _ in range(4)]
        if all(self.lit):
            self.lit[rng.randrange(4)] = False
        self.done = False
        self.turn = 0
        return self._view("Light every lantern. \\boxed{N} toggles lantern N and its neighbours (1-4)."), {}

    def _view(self, head):
        return head + " " + "".join("*" if x else "." for x in self.lit)

    def step(self, action):
        if self.done:
            return self._view("The game is over."), 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([1-4])\s*\}", action)
        if m:
            n = int(m.group(1)) - 1
            for k in (n - 1, n, n + 1):
                if 0 <= k < 4:
                    self.lit[k] = not self.lit[k]
        self.done = all(self.lit)
        reward = 1.0 if self.done else 0.0
        return self._view("All lit!" if self.done else "Lanterns:"), reward, self.done, self.turn >= 20 and not self.done, {}

    def solution(self):
        # search the 16 press sets (each press at most once) for one that lights all
        for mask in range(16):
            lit = list(self.lit)
            for n in range(4):
                if mask >> n & 1:
                    for k in (n - 1, n, n + 1):
                        if 0 <= k < 4:
                            lit[k] = not lit[k]
            if all(lit):
                return ["\\boxed{%d}" % (n + 1) for n in range(4) if mask >> n & 1]
        raise RuntimeError("unreachable: four lanterns in a row are always solvable")
