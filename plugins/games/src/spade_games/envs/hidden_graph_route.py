"""Hidden graph route: scan towns to reveal roads, then submit the shortest route."""

import heapq
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
    return " ".join(found[-1].replace(",", " ").replace("-", " ").strip().split())


class HiddenGraphRouteEnv:
    """Eight towns A-H joined by hidden two-way roads with lengths 1-9; scans cost turns."""

    TOWNS = "ABCDEFGH"
    EXTRA_ROADS = 5
    MAX_LENGTH = 9
    # what an edit may change (spade_designer.knobs): roads drawn beyond the spanning tree (a
    # drawn road that exists already is skipped) and the longest road
    KNOBS = {"EXTRA_ROADS": (int, 0, 10), "MAX_LENGTH": (int, 2, 20)}
    HARDER = {"EXTRA_ROADS": "higher", "MAX_LENGTH": "higher"}
    GRAMMAR = (
        "Commands: \\boxed{scan X} reveals every road at town X and its length; "
        "\\boxed{route A C F} submits a route as a list of towns from start to goal (ends the game)."
    )

    def __init__(self, max_turns=9):
        self.max_turns = max_turns
        self.roads = {}
        self.start = "A"
        self.goal = "H"
        self.best = 1
        self.best_path = []
        self.scanned = set()
        self.turn = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        towns = list(self.TOWNS)
        self.roads = {t: {} for t in towns}
        order = towns[:]
        rng.shuffle(order)
        for i in range(1, len(order)):  # a random spanning tree keeps the map connected
            self._add(order[i], rng.choice(order[:i]), rng.randint(1, self.MAX_LENGTH))
        for _ in range(self.EXTRA_ROADS):
            a, b = rng.sample(towns, 2)
            if b not in self.roads[a]:
                self._add(a, b, rng.randint(1, self.MAX_LENGTH))
        while True:
            self.start, self.goal = rng.sample(towns, 2)
            self.best, self.best_path = self._shortest()
            if len(self.best_path) >= 3 and self.goal not in self.roads[self.start]:
                break
        self.scanned = set()
        self.turn = 0
        self.done = False
        obs = (
            "Eight towns A-H are joined by two-way roads you cannot see. Find the shortest route from %s "
            "to %s. %s You have %d turns, so scan wisely." % (self.start, self.goal, self.GRAMMAR, self.max_turns)
        )
        return obs, {"turn": 0}

    def _add(self, a, b, length):
        self.roads[a][b] = length
        self.roads[b][a] = length

    def _shortest(self):
        queue = [(0, self.start, [self.start])]
        seen = set()
        while queue:
            dist, town, path = heapq.heappop(queue)
            if town == self.goal:
                return dist, path
            if town in seen:
                continue
            seen.add(town)
            for nxt, length in sorted(self.roads[town].items()):
                if nxt not in seen:
                    heapq.heappush(queue, (dist + length, nxt, path + [nxt]))
        return 0, []

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.upper().split()
        verb = parts[0] if parts else ""
        if verb == "SCAN":
            if len(parts) != 2 or parts[1] not in self.TOWNS or len(parts[1]) != 1:
                return "Invalid scan: name one town among A-H.", 0.0, False
            town = parts[1]
            self.scanned.add(town)
            roads = ", ".join("%s-%s length %d" % (town, b, d) for b, d in sorted(self.roads[town].items()))
            return "Roads at %s: %s." % (town, roads), 0.0, False
        if verb == "ROUTE":
            path = parts[1:]
            if len(path) < 2 or any(t not in self.TOWNS or len(t) != 1 for t in path):
                return "Invalid route: list towns A-H separated by spaces.", 0.0, False
            if path[0] != self.start or path[-1] != self.goal:
                return "Invalid route: it must start at %s and end at %s." % (self.start, self.goal), 0.0, False
            for a, b in zip(path, path[1:]):
                if b not in self.roads[a]:
                    return "There is no road %s-%s; the route was rejected." % (a, b), 0.0, False
            length = sum(self.roads[a][b] for a, b in zip(path, path[1:]))
            if length == self.best:
                return "Shortest route found: length %d." % length, 1.0, True
            return "Your route has length %d; the shortest is %d." % (length, self.best), round(0.9 * self.best / length, 4), True
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
        return ["\\boxed{route %s}" % " ".join(self.best_path)]

    def close(self):
        pass
