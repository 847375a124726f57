"""Broken, an off-by-one grammar bug: ``\\boxed{take}`` with its argument dropped raises
IndexError (``parts[1]`` of a one-word command)."""


class PantryEnv:
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.items = rng.sample(["salt", "rice", "oil", "tea", "jam"], 3)
        self.bag = []
        self.turn = 0
        return f"Pack {', '.join(self.items)}. Commands: \\boxed{{take ITEM}}, \\boxed{{list}}.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        if not m:
            return "Use a command.", 0.0, False, self.turn >= 15, {}
        parts = m.group(1).split()
        if parts and parts[0] == "take":
            item = parts[1]
            if item in self.items and item not in self.bag:
                self.bag.append(item)
            done = sorted(self.bag) == sorted(self.items)
            return f"Bag: {', '.join(self.bag) or 'empty'}.", float(done), done, self.turn >= 15 and not done, {}
        if parts == ["list"]:
            return f"Still needed: {', '.join(i for i in self.items if i not in self.bag)}.", 0.0, False, self.turn >= 15, {}
        return "Unknown command.", 0.0, False, self.turn >= 15, {}

    def solution(self):
        return ["\\boxed{take %s}" % i for i in self.items]
