"""Sound: a format error costs -0.1 (as in the reference tool-use base), and the class says
so with the old Gym convention, ``reward_range = (-0.1, 1.0)``."""


class ParityPathEnv:
    reward_range = (-0.1, 1.0)

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.target = rng.randint(3, 9)
        self.moves = (self.target + 1) // 2
        self.pos = 0
        self.turn = 0
        return (f"You stand at 0. Reach {self.target} exactly in at most {self.moves} moves of \\boxed{{+1}} "
                "or \\boxed{+2}."), {}

    def _play(self, action):
        self.turn += 1
        m = re.fullmatch(r"\s*\\boxed\{\s*\+([12])\s*\}\s*", action)
        if not m:
            return "Format error: use \\boxed{+1} or \\boxed{+2}.", -0.1, False, self.turn >= 15, {}
        self.pos += int(m.group(1))
        self.moves -= 1
        if self.pos == self.target:
            return f"At {self.pos}: you made it.", 1.0, True, False, {}
        if self.pos > self.target or self.moves == 0:
            return f"At {self.pos}: you did not make it.", 0.0, True, False, {}
        return f"At {self.pos}.", 0.0, False, self.turn >= 15, {}

    def solution(self):
        return ["\\boxed{+2}"] * (self.target // 2) + ["\\boxed{+1}"] * (self.target % 2)

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
