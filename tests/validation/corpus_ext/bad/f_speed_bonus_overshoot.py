"""Broken: a speed bonus is added to the win reward, so winning quickly pays more than
1.0, outside the range [0, 1]."""


class QuickCodeEnv:
    def reset(self, seed=None):
        self.code = random.Random(seed).choice(["red", "green", "blue"])
        self.turn = 0
        return "Say the colour of the day: \\boxed{red}, \\boxed{green} or \\boxed{blue}. Be quick!", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*(red|green|blue)\s*\}", action)
        if m and m.group(1) == self.code:
            bonus = 0.5 if self.turn == 1 else 0.0
            return "Correct!", 1.0 + bonus, True, False, {}
        return "Not today's colour.", 0.0, False, self.turn >= 6, {}

    def solution(self):
        return ["\\boxed{%s}" % self.code]
