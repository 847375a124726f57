"""Causal graph: intervene on variables (optionally blocking others) to recover a hidden DAG."""

import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")

NAMES = "PQRS"


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].replace(",", " ").strip().split())


class CausalGraphEnv:
    """Four variables P, Q, R, S with hidden direct causal links forming an acyclic graph.

    ``do X`` switches X on and reports every variable that switches on as a consequence;
    ``block`` holds variables off, cutting the paths through them, which is what tells a
    direct link from an indirect one.
    """

    MAX_LINKS = 5
    # what an edit may change (spade_designer.knobs): how many direct links the graph may have
    KNOBS = {"MAX_LINKS": (int, 2, 6)}
    HARDER = {"MAX_LINKS": "higher"}
    GRAMMAR = (
        "Commands: \\boxed{do P} switches P on and shows which variables follow; "
        "\\boxed{do P block Q R} does the same while holding Q and R off; "
        "\\boxed{links P>Q Q>S} states every direct causal link (ends the game; \\boxed{links none} if there are none)."
    )

    def __init__(self, max_turns=16):
        self.max_turns = max_turns
        self.edges = set()
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            order = list(NAMES)
            rng.shuffle(order)
            self.edges = {(a, b) for i, a in enumerate(order) for b in order[i + 1:] if rng.random() < 0.5}
            if 2 <= len(self.edges) <= self.MAX_LINKS:
                break
        self.turn = 0
        self.done = False
        obs = (
            "Four on/off variables P, Q, R, S (all off) are joined by hidden one-way causal links (no cycles). "
            "When a variable turns on, every variable it directly causes turns on too, and so on down the chain. "
            "Find every direct link. %s You have %d turns." % (self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def _effects(self, source, blocked):
        on, frontier = {source}, [source]
        while frontier:
            node = frontier.pop()
            for a, b in sorted(self.edges):
                if a == node and b not in on and b not in blocked:
                    on.add(b)
                    frontier.append(b)
        return sorted(on - {source})

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.split()
        verb = parts[0].lower() if parts else ""
        if verb == "do":
            names = [p.upper() for p in parts[1:]]
            if not names or names[0] not in NAMES or len(names[0]) != 1:
                return "Invalid intervention: \\boxed{do X} or \\boxed{do X block Y ...} with variables P, Q, R, S.", 0.0, False
            source, rest = names[0], names[1:]
            if rest and rest[0] != "BLOCK":
                return "Invalid intervention: extra words must follow the keyword 'block'.", 0.0, False
            blocked = set(rest[1:])
            if (rest and not blocked) or any(b not in NAMES or len(b) != 1 for b in blocked) or source in blocked:
                return "Invalid block list: name variables other than %s among P, Q, R, S." % source, 0.0, False
            followers = self._effects(source, blocked)
            held = " holding %s off" % ", ".join(sorted(blocked)) if blocked else ""
            return "do(%s)%s: %s." % (source, held, "then " + ", ".join(followers) + " turned on" if followers else "nothing else turned on"), 0.0, False
        if verb == "links":
            tokens = [p.upper() for p in parts[1:]]
            guess = set()
            if tokens != ["NONE"]:
                for token in tokens:
                    pair = token.split(">")
                    if len(pair) != 2 or pair[0] not in NAMES or pair[1] not in NAMES or len(pair[0]) != 1 or len(pair[1]) != 1 or pair[0] == pair[1]:
                        return "Invalid link %r: write links like P>Q separated by spaces." % token[:20], 0.0, False
                    guess.add((pair[0], pair[1]))
            if guess == self.edges:
                return "Correct! The links are %s." % " ".join("%s>%s" % e for e in sorted(self.edges)), 1.0, True
            hits = len(guess & self.edges)
            f1 = 2 * hits / (len(guess) + len(self.edges))
            return "Not quite: the links were %s." % " ".join("%s>%s" % e for e in sorted(self.edges)), round(0.8 * f1, 4), True
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
        return ["\\boxed{links %s}" % " ".join("%s>%s" % e for e in sorted(self.edges))]

    def close(self):
        pass
