"""Growth lab: run controlled experiments to find which factors really make a plant grow."""

import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")

FACTORS = ("water", "light", "soil", "music", "pot", "heat")


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].replace(",", " ").strip().split())


class GrowthLabEnv:
    """Growth = base + sum of hidden effects of the causal factors set high (+ one interaction).

    Two or three of six factors matter; their effects can have opposite signs, so changing
    several factors at once can hide a cause; one pair of causes interacts.
    """

    MAX_CAUSES = 3
    # what an edit may change (spade_designer.knobs): how many factors may matter (at least two)
    KNOBS = {"MAX_CAUSES": (int, 2, 4)}
    HARDER = {"MAX_CAUSES": "higher"}
    GRAMMAR = (
        "Commands: \\boxed{experiment 101000} grows a plant with each factor high (1) or low (0), in the "
        "order water, light, soil, music, pot, heat; \\boxed{causes water heat} names every factor that "
        "affects growth (ends the game)."
    )

    def __init__(self, max_turns=12):
        self.max_turns = max_turns
        self.causes = []
        self.effects = {}
        self.base = 20
        self.interaction = 0
        self.experiments = 0
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        count = rng.choice(range(2, self.MAX_CAUSES + 1))
        self.causes = sorted(rng.sample(range(len(FACTORS)), count))
        self.effects = {}
        for k in self.causes:
            self.effects[k] = rng.choice([-1, 1]) * rng.randint(3, 12)
        self.base = rng.randint(20, 40)
        self.interaction = rng.choice([-1, 1]) * rng.randint(1, 4)
        self.experiments = 0
        self.turn = 0
        self.done = False
        obs = (
            "You study how six factors (%s) affect a plant's growth in mm. Each can be set low or high; "
            "growth is fully determined by the settings. Find exactly which factors have any effect. "
            "%s You have %d turns." % (", ".join(FACTORS), self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def growth(self, bits):
        total = self.base + sum(self.effects[k] for k in self.causes if bits[k])
        first, second = self.causes[0], self.causes[1]
        if bits[first] and bits[second]:
            total += self.interaction
        return total

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.lower().split()
        verb = parts[0] if parts else ""
        if verb == "experiment":
            bits = "".join(parts[1:])
            if len(bits) != len(FACTORS) or any(ch not in "01" for ch in bits):
                return "Invalid experiment: give six digits 0/1 (water, light, soil, music, pot, heat).", 0.0, False
            self.experiments += 1
            levels = [int(ch) for ch in bits]
            return "Experiment %s: the plant grew %d mm." % (bits, self.growth(levels)), 0.0, False
        if verb == "causes":
            named = parts[1:]
            if any(n not in FACTORS for n in named) or len(set(named)) != len(named):
                return "Invalid causes: name distinct factors among %s (or none)." % ", ".join(FACTORS), 0.0, False
            guess = {FACTORS.index(n) for n in named}
            truth = set(self.causes)
            if guess == truth:
                return "Correct! The causes are %s." % ", ".join(FACTORS[k] for k in self.causes), 1.0, True
            overlap = len(guess & truth) / len(guess | truth)
            return "Not quite: the causes were %s." % ", ".join(FACTORS[k] for k in self.causes), round(0.8 * overlap, 4), True
        return "Unknown command %r. %s" % (cmd[:60], self.GRAMMAR), 0.0, False

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
        return ["\\boxed{causes %s}" % " ".join(FACTORS[k] for k in self.causes)]

    def close(self):
        pass
