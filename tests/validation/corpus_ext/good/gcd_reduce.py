"""Sound, reference style: shrink a list of numbers to their greatest common divisor by
subtracting one from another; ``math`` and ``functools`` used without imports."""


class SubtractToGcdEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        g = rng.randint(2, 5)
        while True:  # the gcd must not be on the board already
            self.nums = [g * rng.randint(2, 6) for _ in range(3)]
            self.goal = functools.reduce(math.gcd, self.nums)
            if self.goal not in self.nums:
                break
        self.turn = 0
        return (f"Numbers: {self.nums}. \\boxed{{I J}} replaces number I with (I - J) when it stays positive "
                f"(positions 1-3). Make any number equal {self.goal}."), {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([1-3])\s+([1-3])\s*\}", action)
        if not m:
            return f"Use \\boxed{{I J}}. Numbers: {self.nums}", 0.0, False, self.turn >= 25, {}
        i, j = int(m.group(1)) - 1, int(m.group(2)) - 1
        if i == j or self.nums[i] - self.nums[j] <= 0:
            return f"Not allowed. Numbers: {self.nums}", 0.0, False, self.turn >= 25, {}
        self.nums[i] -= self.nums[j]
        if self.goal in self.nums:
            return f"Numbers: {self.nums}. Reached {self.goal}!", 1.0, True, False, {}
        return f"Numbers: {self.nums}", 0.0, False, self.turn >= 25, {}

    def solution(self):
        nums, moves = list(self.nums), []
        while self.goal not in nums:
            order = sorted(range(3), key=lambda k: nums[k])
            small = next(k for k in order if nums[k] > 0)
            big = max(range(3), key=lambda k: nums[k])
            if nums[big] - nums[small] <= 0:
                break
            nums[big] -= nums[small]
            moves.append("\\boxed{%d %d}" % (big + 1, small + 1))
        return moves

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
