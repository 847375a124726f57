"""Sound, reference style: a sliding row puzzle with an undo command, states kept with
``copy.deepcopy`` (``copy`` not imported); a list solution."""


class RowSlideEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.target = [1, 2, 3]
        self.target.insert(rng.randrange(4), 0)
        self.row = list(self.target)
        for _ in range(6):
            z = self.row.index(0)
            k = rng.choice([i for i in (z - 1, z + 1) if 0 <= i < 4])
            self.row[z], self.row[k] = self.row[k], self.row[z]
        if self.row == self.target:
            z = self.row.index(0)
            k = z - 1 if z > 0 else z + 1
            self.row[z], self.row[k] = self.row[k], self.row[z]
        self.history = []
        self.turn = 0
        goal = " ".join(str(t) if t else "_" for t in self.target)
        return self._show(f"Make the row read {goal}: slide a tile into the gap with \\boxed{{left}} or "
                          "\\boxed{right}; \\boxed{undo} takes a move back."), {}

    def _show(self, head):
        return f"{head} Row: {' '.join(str(t) if t else '_' for t in self.row)}"

    def _play(self, action):
        self.turn += 1
        trunc = self.turn >= 25
        m = re.search(r"\\boxed\{\s*(left|right|undo)\s*\}", action)
        if not m:
            return self._show("Unknown move."), 0.0, False, trunc, {}
        if m.group(1) == "undo":
            if self.history:
                self.row = self.history.pop()
            return self._show("Undone."), 0.0, False, trunc, {}
        z = self.row.index(0)
        k = z + 1 if m.group(1) == "left" else z - 1  # the tile right of the gap slides left
        if not 0 <= k < 4:
            return self._show("Nothing slides that way."), 0.0, False, trunc, {}
        self.history.append(copy.deepcopy(self.row))
        self.row[z], self.row[k] = self.row[k], self.row[z]
        if self.row == self.target:
            return self._show("Solved!"), 1.0, True, False, {}
        return self._show("Moved."), 0.0, False, trunc, {}

    def solution(self):
        z, t = self.row.index(0), self.target.index(0)
        return ["\\boxed{left}"] * (t - z) if t > z else ["\\boxed{right}"] * (z - t)

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
