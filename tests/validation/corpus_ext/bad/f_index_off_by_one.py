"""Broken, an off-by-one: cards are numbered 1-6 in the text but indexed from 0, so
flipping card 6 raises IndexError."""


class MemoryCardsEnv:
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.cards = ["A", "A", "B", "B", "C", "C"]
        rng.shuffle(self.cards)
        self.shown = set()
        self.turn = 0
        return "Six face-down cards, numbered 1-6. Flip one with \\boxed{flip N}; find where both A cards are.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{flip (\d+)\}", action)
        if not m:
            return "Flip a card with \\boxed{flip N}.", 0.0, False, self.turn >= 12, {}
        n = int(m.group(1))
        face = self.cards[n]  # off by one: the text numbers cards from 1
        if face == "A":
            self.shown.add(n)
        done = len(self.shown) == 2
        return f"Card {n} shows {face}.", float(done), done, self.turn >= 12 and not done, {}

    def solution(self):
        return ["\\boxed{flip %d}" % i for i, c in enumerate(self.cards) if c == "A"]
