"""Switch circuit: discover which switches drive which lights, then light the target pattern."""

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


class SwitchCircuitEnv:
    """N switches, N lights; each light is on when an odd number of its hidden switches are on."""

    N = 10
    MIN_TOGGLES = 4
    # what an edit may change (spade_designer.knobs): switches (and lights), the fewest toggles a
    # target needs
    KNOBS = {"N": (int, 8, 12), "MIN_TOGGLES": (int, 2, 5)}
    HARDER = {"N": "higher", "MIN_TOGGLES": "higher"}

    @property
    def GRAMMAR(self):
        return "Command: \\boxed{toggle K} flips switch K (1-%d). The game ends when the lights match the target." % self.N

    def __init__(self, max_turns=20):
        self.max_turns = max_turns
        self.wiring = []
        self.switches = [0] * self.N
        self.target = [0] * self.N
        self.plan = []
        self.matched_at_start = 0
        self.turn = 0
        self.done = False

    def _lights(self, switches):
        return [sum(switches[k] for k in wires) % 2 for wires in self.wiring]

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            self.wiring = [sorted(rng.sample(range(self.N), rng.randint(1, 3))) for _ in range(self.N)]
            setting = [rng.randint(0, 1) for _ in range(self.N)]
            self.target = self._lights(setting)
            # Cheapest way to reach the target: the light pattern of every switch setting (as
            # bitmasks, built from the setting without its lowest switch), then the fewest toggles.
            effect = [sum(1 << i for i, wires in enumerate(self.wiring) if k in wires) for k in range(self.N)]
            pattern = [0] * (1 << self.N)
            for mask in range(1, 1 << self.N):
                low = (mask & -mask).bit_length() - 1
                pattern[mask] = pattern[mask & (mask - 1)] ^ effect[low]
            goal = sum(1 << i for i, lit in enumerate(self.target) if lit)
            cheapest = min((m for m in range(1 << self.N) if pattern[m] == goal), key=lambda m: (bin(m).count("1"), m))
            # At least MIN_TOGGLES toggles needed, so blind toggling rarely lights the target.
            if bin(cheapest).count("1") >= self.MIN_TOGGLES:
                break
        self.plan = [k for k in range(self.N) if cheapest >> k & 1]
        self.switches = [0] * self.N
        self.matched_at_start = self._matched()
        self.turn = 0
        self.done = False
        obs = (
            "A control panel has switches 1-%d (all off) and lights 1-%d (all off). Hidden wiring connects "
            "each light to some switches; a light is on exactly when an odd number of its switches are on. "
            "Target lights: %s. %s You have %d turns. %s"
            % (self.N, self.N, self._show(self.target), self.GRAMMAR, self.max_turns, self._state())
        )
        return obs, {"turn": 0}

    def _show(self, bits):
        return " ".join("%d:%s" % (i + 1, "on" if b else "off") for i, b in enumerate(bits))

    def _state(self):
        return "Switches on: %s. Lights now: %s." % (
            ", ".join(str(k + 1) for k in range(self.N) if self.switches[k]) or "none",
            self._show(self._lights(self.switches)))

    def _matched(self):
        return sum(1 for a, b in zip(self._lights(self.switches), self.target) if a == b)

    def _progress(self):
        # Lights that already matched at the start earn nothing: only progress made counts.
        gained = self._matched() - self.matched_at_start
        return round(max(0.0, 0.8 * gained / (self.N - self.matched_at_start)), 4)

    def _act(self, cmd):
        if cmd is None:
            return "Invalid action: wrap one command in \\boxed{...}. " + self.GRAMMAR, self._progress(), False
        parts = cmd.lower().split()
        if len(parts) == 2 and parts[0] in ("toggle", "flip"):
            if not parts[1].isdecimal() or not 1 <= int(parts[1]) <= self.N:
                return "Invalid switch: give a number from 1 to %d." % self.N, self._progress(), False
            k = int(parts[1]) - 1
            self.switches[k] ^= 1
            if self._lights(self.switches) == self.target:
                return "Switch %d flipped. The lights match the target!" % (k + 1), 1.0, True
            return "Switch %d flipped. %s" % (k + 1, self._state()), self._progress(), False
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
        return ["\\boxed{toggle %d}" % (k + 1) for k in self.plan]

    def close(self):
        pass
