"""Sound, reference style: typing names (List, Dict, Optional, Tuple) in annotations,
used without ``from typing import``; sort three stacks of crates by moving top crates."""


class CrateStacksEnv:
    def reset(self, seed: Optional[int] = None) -> Tuple[str, Dict[str, Any]]:
        self.over = False
        rng = random.Random(seed)
        crates: List[str] = ["A", "B", "C"]
        rng.shuffle(crates)
        self.stacks: Dict[int, List[str]] = {1: crates, 2: [], 3: []}
        self.turn = 0
        return self._show("Move the top crate with \\boxed{FROM TO}. Stack 3 must read A B C from the bottom."), {}

    def _show(self, head: str) -> str:
        rows = "; ".join(f"{k}: {' '.join(v) or '-'}" for k, v in self.stacks.items())
        return f"{head} [{rows}]"

    def _play(self, action: str):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([1-3])\s+([1-3])\s*\}", action)
        if not m or not self.stacks[int(m.group(1))]:
            return self._show("Not a move."), 0.0, False, self.turn >= 20, {}
        a, b = int(m.group(1)), int(m.group(2))
        self.stacks[b].append(self.stacks[a].pop())
        if self.stacks[3] == ["A", "B", "C"]:
            return self._show("Sorted!"), 1.0, True, False, {}
        return self._show("Moved."), 0.0, False, self.turn >= 20, {}

    def solution(self) -> List[str]:
        # unstack everything onto 2, then build A B C on 3 from stack 2 through 1
        moves: List[str] = []
        s = {k: list(v) for k, v in self.stacks.items()}

        def move(a: int, b: int) -> None:
            s[b].append(s[a].pop())
            moves.append("\\boxed{%d %d}" % (a, b))

        while s[1]:
            move(1, 2)
        for want in ["A", "B", "C"]:
            while s[2][-1] != want:
                move(2, 1)
            move(2, 3)
            while s[1]:
                move(1, 2)
        return moves

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
