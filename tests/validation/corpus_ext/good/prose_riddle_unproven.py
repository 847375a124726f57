"""Sound but unproven: a riddle whose ``solution()`` is prose, as reference environments
often return; nothing to replay, so it is admitted with feasibility unproven and never
counted as feasible."""

RIDDLES = [
    ("I have keys but open no locks. What am I?", "piano"),
    ("The more you take, the more you leave behind. What are they?", "footsteps"),
    ("What has a neck but no head?", "bottle"),
]


class RiddleEnv:
    def reset(self, seed=None):
        self.question, self.answer = RIDDLES[random.Random(seed).randrange(len(RIDDLES))]
        self.tries = 0
        return f"{self.question} Answer with \\boxed{{word}}; you have three tries.", {}

    def step(self, action):
        self.tries += 1
        m = re.search(r"\\boxed\{\s*([^{}]+?)\s*\}", action)
        if m and m.group(1).lower() == self.answer:
            return "Correct!", 1.0, True, False, {}
        if self.tries >= 3:
            return "Out of tries.", 0.0, True, False, {}
        return f"No. {3 - self.tries} tries left.", 0.0, False, False, {}

    def solution(self):
        return f"The answer to the riddle is the word {self.answer}."
