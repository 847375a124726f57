"""Fog maze: walk a hidden maze to its exit, seeing only the passages around you."""

import collections
import random
import re

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")

_MOVES = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}
_ALIASES = {"n": "north", "s": "south", "w": "west", "e": "east", "up": "north", "down": "south",
            "left": "west", "right": "east"}


def _command(action):
    """Payload of the last \\boxed{...} in the action, whitespace-normalised; None if absent."""
    if not isinstance(action, str):
        return None
    found = _BOX.findall(action)
    if not found:
        return None
    return " ".join(found[-1].strip().split())


class FogMazeEnv:
    """A 5x5 perfect maze (one path between any two cells); walls are seen only where you stand."""

    SIZE = 5
    # what an edit may change (spade_designer.knobs): the maze's side
    KNOBS = {"SIZE": (int, 5, 7)}
    HARDER = {"SIZE": "higher"}
    GRAMMAR = "Command: \\boxed{move DIR} with DIR one of north, south, east, west (row 0 is the north edge)."

    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.open = {}
        self.pos = (0, 0)
        self.exit = (0, 0)
        self.start_dist = 1
        self.turn = 0
        self.visited = set()
        self.done = False

    def _carve(self, rng):
        n = self.SIZE
        self.open = {(r, c): set() for r in range(n) for c in range(n)}
        start = (rng.randrange(n), rng.randrange(n))
        stack, seen = [start], {start}
        while stack:
            r, c = stack[-1]
            options = []
            for name, (dr, dc) in sorted(_MOVES.items()):
                nxt = (r + dr, c + dc)
                if nxt in self.open and nxt not in seen:
                    options.append((name, nxt))
            if not options:
                stack.pop()
                continue
            name, nxt = rng.choice(options)
            back = {"north": "south", "south": "north", "east": "west", "west": "east"}[name]
            self.open[(r, c)].add(name)
            self.open[nxt].add(back)
            seen.add(nxt)
            stack.append(nxt)

    def _distances(self, source):
        dist = {source: 0}
        queue = collections.deque([source])
        while queue:
            cell = queue.popleft()
            for name in self.open[cell]:
                dr, dc = _MOVES[name]
                nxt = (cell[0] + dr, cell[1] + dc)
                if nxt not in dist:
                    dist[nxt] = dist[cell] + 1
                    queue.append(nxt)
        return dist

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._carve(rng)
        self.pos = (rng.randrange(self.SIZE), rng.randrange(self.SIZE))
        dist = self._distances(self.pos)
        far = max(dist.values())
        # Far enough to need exploring, near enough that the shortest walk leaves room to get lost.
        low = max(4, min(far // 2, 6))
        candidates = sorted(cell for cell, d in dist.items() if low <= d <= 10)
        self.exit = rng.choice(candidates)
        self.start_dist = dist[self.exit]
        self.turn = 0
        self.visited = {self.pos}
        self.done = False
        obs = (
            "You are in a foggy %dx%d maze of rooms (rows and columns 0-%d). You can only see which "
            "walls of your own room have openings. Reach the exit room at row %d, column %d. %s "
            "You have %d turns. %s" % (self.SIZE, self.SIZE, self.SIZE - 1, self.exit[0], self.exit[1], self.GRAMMAR,
                                       self.max_turns, self._view())
        )
        return obs, {"turn": 0}

    def _view(self):
        exits = ", ".join(d for d in ("north", "south", "east", "west") if d in self.open[self.pos])
        return "You stand at row %d, column %d. Openings: %s. Rooms visited: %d." % (
            self.pos[0], self.pos[1], exits, len(self.visited))

    def _progress(self):
        d = self._distances(self.pos)[self.exit]
        return round(max(0.0, 0.9 * (1 - d / self.start_dist)), 4)

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, self._progress(), False
        parts = cmd.lower().split()
        if len(parts) == 2 and parts[0] in ("move", "go"):
            direction = _ALIASES.get(parts[1], parts[1])
            if direction not in _MOVES:
                return "Invalid direction %r: use north, south, east or west." % parts[1][:20], self._progress(), False
            if direction not in self.open[self.pos]:
                return "A wall blocks the way %s. %s" % (direction, self._view()), self._progress(), False
            dr, dc = _MOVES[direction]
            self.pos = (self.pos[0] + dr, self.pos[1] + dc)
            self.visited.add(self.pos)
            if self.pos == self.exit:
                return "You found the exit!", 1.0, True
            return "You move %s. %s" % (direction, self._view()), self._progress(), False
        return "Unknown command %r. %s" % (cmd[:60], self.GRAMMAR), self._progress(), False

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
        dist = self._distances(self.exit)
        cell, path = self.pos, []
        while cell != self.exit:
            for name in sorted(self.open[cell]):
                dr, dc = _MOVES[name]
                nxt = (cell[0] + dr, cell[1] + dc)
                if dist[nxt] == dist[cell] - 1:
                    path.append("\\boxed{move %s}" % name)
                    cell = nxt
                    break
        return path

    def close(self):
        pass
