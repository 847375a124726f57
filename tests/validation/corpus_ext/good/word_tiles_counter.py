"""Sound, reference style: spell words from letter tiles; ``Counter`` and ``namedtuple``
used without importing them, and a string solution of boxed words."""

Round = namedtuple("Round", "tiles words")

ROUNDS = [
    Round("TEARSPLO", ["PETAL", "STORE"]),
    Round("MANGOLED", ["GOLD", "MEAN"]),
    Round("CRISPHAT", ["CHIP", "STAR"]),
    Round("BLUEMIST", ["SMILE", "BUT"]),
]


class WordTilesEnv:
    def reset(self, seed=None):
        self.over = False
        self.round = ROUNDS[random.Random(seed).randrange(len(ROUNDS))]
        self.found = set()
        self.turn = 0
        lengths = ", ".join(str(len(w)) for w in self.round.words)
        return f"Tiles: {self.round.tiles}. Find the {len(self.round.words)} hidden words (lengths {lengths}); say \\boxed{{WORD}}.", {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([A-Za-z]+)\s*\}", action)
        if not m:
            return "Say a word like \\boxed{TEA}.", 0.0, False, self.turn >= 15, {}
        word = m.group(1).upper()
        if Counter(word) - Counter(self.round.tiles):
            return f"{word} cannot be made from {self.round.tiles}.", 0.0, False, self.turn >= 15, {}
        if word in self.round.words:
            self.found.add(word)
        done = len(self.found) == len(self.round.words)
        reward = len(self.found) / len(self.round.words) if done else 0.4 * len(self.found) / len(self.round.words)
        msg = f"{word}: {'hidden word!' if word in self.round.words else 'a word, but not a hidden one'} ({len(self.found)} found)"
        return msg, reward, done, self.turn >= 15 and not done, {}

    def solution(self):
        return " ".join("\\boxed{%s}" % w for w in self.round.words)

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
