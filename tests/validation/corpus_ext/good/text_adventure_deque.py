"""Sound, reference style: a small text adventure keeping the last rooms in a
``deque`` and the map in a ``defaultdict``, neither imported."""


class CellarEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.exits = defaultdict(dict)
        for a, d, b in [("hall", "down", "cellar"), ("cellar", "north", "vault"), ("cellar", "east", "store")]:
            self.exits[a][d] = b
            self.exits[b][{"down": "up", "north": "south", "east": "west"}[d]] = a
        self.key_room = rng.choice(["store", "hall"])
        self.room, self.has_key = "hall", False
        self.trail = deque(maxlen=3)
        self.turn = 0
        return self._look(), {}

    def _look(self):
        item = " A brass key lies here." if self.room == self.key_room and not self.has_key else ""
        ways = ", ".join(sorted(self.exits[self.room]))
        return f"You are in the {self.room}.{item} Exits: {ways}. Commands: \\boxed{{go DIR}}, \\boxed{{take key}}, \\boxed{{open vault}}."

    def _play(self, action):
        self.turn += 1
        trunc = self.turn >= 25
        m = re.search(r"\\boxed\{\s*([^{}]*?)\s*\}", action)
        cmd = m.group(1).lower() if m else ""
        if cmd.startswith("go "):
            nxt = self.exits[self.room].get(cmd[3:].strip())
            if nxt is None:
                return "You cannot go that way. " + self._look(), 0.0, False, trunc, {}
            self.trail.append(self.room)
            self.room = nxt
            return self._look(), 0.0, False, trunc, {}
        if cmd == "take key" and self.room == self.key_room and not self.has_key:
            self.has_key = True
            return "Taken. " + self._look(), 0.3, False, trunc, {}
        if cmd == "open vault" and self.room == "vault":
            if self.has_key:
                return "The vault opens. Treasure!", 1.0, True, False, {}
            return "Locked. You need a key.", 0.0, False, trunc, {}
        return "Nothing happens. " + self._look(), 0.0, False, trunc, {}

    def solution(self):
        if self.key_room == "hall":
            return ["\\boxed{take key}", "\\boxed{go down}", "\\boxed{go north}", "\\boxed{open vault}"]
        return ["\\boxed{go down}", "\\boxed{go east}", "\\boxed{take key}", "\\boxed{go west}",
                "\\boxed{go north}", "\\boxed{open vault}"]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
