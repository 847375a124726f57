"""Island of liars: knights always tell the truth, knaves always lie; sort six islanders."""

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
    return " ".join(found[-1].strip().split())


class IslandOfLiarsEnv:
    """Six islanders A-F; asking X whether Y is a knight reveals only whether X and Y are alike.

    The announced number of knights is never three, so the two groups that the answers
    reveal can always be told apart by their sizes.
    """

    NAMES = "ABCDEF"
    MAX_ANSWERS = 2
    # what an edit may change (spade_designer.knobs): how many verdicts the player may give
    KNOBS = {"MAX_ANSWERS": (int, 1, 4)}
    HARDER = {"MAX_ANSWERS": "lower"}
    GRAMMAR = (
        "Commands: \\boxed{ask X Y} asks islander X 'Is Y a knight?' (X and Y are letters A-F); "
        "\\boxed{answer KNKKNN} gives your verdict, one letter per islander A-F: K = knight, N = knave."
    )

    def __init__(self, max_turns=12, max_answers=None):
        self.max_turns = max_turns
        self.max_answers = self.MAX_ANSWERS if max_answers is None else max_answers
        self.kinds = "KKKKKK"
        self.turn = 0
        self.answers = 0
        self.done = False

    def reset(self, seed=None):
        rng = random.Random(seed)
        knights = rng.choice([1, 2, 4, 5])
        chosen = set(rng.sample(range(6), knights))
        self.kinds = "".join("K" if i in chosen else "N" for i in range(6))
        self.turn = 0
        self.answers = 0
        self.done = False
        obs = (
            "On this island knights always tell the truth and knaves always lie. Six islanders A-F "
            "stand before you; exactly %d of them are knights. Every islander answers yes/no questions "
            "about the others. %s At most %d verdicts; %d turns."
            % (knights, self.GRAMMAR, self.max_answers, self.max_turns)
        )
        return obs, {"turn": 0}

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, 0.0, False
        parts = cmd.upper().split()
        if parts and parts[0] == "ASK":
            if len(parts) != 3 or parts[1] not in self.NAMES or parts[2] not in self.NAMES or len(parts[1]) != 1 or len(parts[2]) != 1:
                return "Invalid question: use \\boxed{ask X Y} with X and Y among A-F.", 0.0, False
            x, y = self.NAMES.index(parts[1]), self.NAMES.index(parts[2])
            truth = self.kinds[y] == "K"
            said = truth if self.kinds[x] == "K" else not truth
            return "You ask %s: 'Is %s a knight?' %s answers: %s." % (
                parts[1], parts[2], parts[1], "yes" if said else "no"), 0.0, False
        if parts and parts[0] == "ANSWER":
            verdict = "".join(parts[1:])
            if len(verdict) != 6 or any(ch not in "KN" for ch in verdict):
                return "Invalid verdict: six letters K or N, one per islander A-F, e.g. \\boxed{answer KNNKNN}.", 0.0, False
            self.answers += 1
            right = sum(1 for v, k in zip(verdict, self.kinds) if v == k)
            if right == 6:
                return "Correct! Knights: %s." % ", ".join(n for n, k in zip(self.NAMES, self.kinds) if k == "K"), 1.0, True
            # Coin-flip verdicts get half right: credit only agreement beyond chance.
            reward = round(0.8 * max(0.0, 2 * right / 6 - 1), 4)
            if self.answers >= self.max_answers:
                return "Wrong verdict (%d of 6 right); no verdicts left." % right, reward, True
            return "Wrong verdict: %d of 6 islanders classified correctly. %d verdict left." % (
                right, self.max_answers - self.answers), reward, False
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
        return ["\\boxed{answer %s}" % self.kinds]

    def close(self):
        pass
