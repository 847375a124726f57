"""Hidden knapsack: item values are secret; probe bundles, then pack the most valuable load."""

import itertools
import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].replace(",", " ").strip().split())


class HiddenKnapsackEnv:
    """Seven items with known weights and hidden values; one final packing is scored against the optimum."""

    N = 7
    # what an edit may change (spade_designer.knobs): how many items there are
    KNOBS = {"N": (int, 4, 10)}
    HARDER = {"N": "higher"}
    GRAMMAR = (
        "Commands: \\boxed{appraise 1 4 6} reports the total value of a set of item numbers (any set, even "
        "over capacity); \\boxed{pack 1 4 6} submits your final load (ends the game)."
    )

    def __init__(self, max_turns=12):
        self.max_turns = max_turns
        self.weights = []
        self.values = []
        self.capacity = 1
        self.best = 1
        self.best_set = ()
        self.best_seen = 0
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            self.weights = [rng.randint(2, 9) for _ in range(self.N)]
            self.values = [rng.randint(3, 30) for _ in range(self.N)]
            self.capacity = sum(self.weights) // 2
            self.best, self.best_set = self._optimum()
            # Reject instances where the most valuable single item alone is optimal: too easy.
            if len(self.best_set) >= 2:
                break
        self.best_seen = 0
        self.turn = 0
        self.done = False
        listing = ", ".join("item %d weighs %d" % (i + 1, w) for i, w in enumerate(self.weights))
        obs = (
            "A knapsack holds at most %d kg. Items: %s. Each item has a secret value. Pack the "
            "most valuable load that fits. %s You have %d turns."
            % (self.capacity, listing, self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def _optimum(self):
        best, best_set = -1, ()
        for size in range(self.N + 1):
            for combo in itertools.combinations(range(self.N), size):
                if sum(self.weights[i] for i in combo) <= self.capacity:
                    value = sum(self.values[i] for i in combo)
                    if value > best:
                        best, best_set = value, combo
        return best, best_set

    def _items(self, tokens):
        if not tokens or not all(t.isdecimal() and 1 <= int(t) <= self.N for t in tokens):
            return None
        items = [int(t) - 1 for t in tokens]
        return items if len(set(items)) == len(items) else None

    def _act(self, cmd):
        progress = round(0.5 * self.best_seen / self.best, 4)
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, progress, False
        parts = cmd.lower().split()
        verb = parts[0] if parts else ""
        if verb in ("appraise", "pack"):
            items = self._items(parts[1:])
            if items is None:
                return "Invalid item list: give distinct item numbers from 1 to %d." % self.N, progress, False
            weight = sum(self.weights[i] for i in items)
            value = sum(self.values[i] for i in items)
            if verb == "appraise":
                if weight <= self.capacity:
                    self.best_seen = max(self.best_seen, value)
                return "Items %s: total weight %d kg, total value %d." % (
                    " ".join(parts[1:]), weight, value), round(0.5 * self.best_seen / self.best, 4), False
            if weight > self.capacity:
                return "That load weighs %d kg, over the %d kg limit: the knapsack tears." % (weight, self.capacity), 0.0, True
            if value == self.best:
                return "Optimal load! Value %d." % value, 1.0, True
            return "Packed value %d; the best possible was %d." % (value, self.best), round(0.9 * value / self.best, 4), True
        return "Unknown command %r. %s" % (cmd[:60], self.GRAMMAR), progress, False

    def step(self, action):
        if self.done:
            return "The episode is over; call reset().", 0.0, True, False, {"error": "episode_over"}
        self.turn += 1
        obs, reward, terminated = self._act(_command(action))
        truncated = False
        if not terminated and self.turn >= self.max_turns:
            truncated = True
            obs += " Out of turns."
        self.done = terminated or truncated
        return obs, reward, terminated, truncated, {"turn": self.turn}

    def solution(self):
        """The shortest winning replay from reset(seed); it reads the hidden state."""
        return ["\\boxed{pack %s}" % " ".join(str(i + 1) for i in self.best_set)]

    def close(self):
        pass
