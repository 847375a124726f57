"""A small text adventure: find the key, unlock the door, leave the house."""
import random
import re


class KeyDoorEnv:
    def __init__(self):
        self.rooms = {"hall": ["kitchen", "study"], "kitchen": ["hall"], "study": ["hall"]}
        self.turn = 0
        self.max_turns = 20

    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.key_room = rng.choice(["kitchen", "study"])
        self.room = "hall"
        self.has_key = False
        self.unlocked = False
        self.turn = 0
        return "You are in the hall. The front door is locked. Commands: go ROOM, look, take key, unlock door, exit.", {}

    def _play(self, action):
        self.turn += 1
        m = re.findall(r"\\boxed\{([^{}]*)\}", action)
        cmd = " ".join(m[-1].lower().split()) if m else ""
        reward, done = 0.0, False
        if cmd.startswith("go "):
            dest = cmd[3:]
            if dest in self.rooms[self.room]:
                self.room = dest
                msg = f"You walk to the {dest}."
            else:
                msg = f"You cannot reach '{dest}' from the {self.room}."
        elif cmd == "look":
            here = " A key glints on the table." if self.room == self.key_room and not self.has_key else ""
            msg = f"You are in the {self.room}. Exits: {', '.join(self.rooms[self.room])}.{here}"
        elif cmd == "take key":
            if self.room == self.key_room and not self.has_key:
                self.has_key = True
                msg, reward = "You take the key.", 0.3
            else:
                msg = "There is no key here."
        elif cmd == "unlock door":
            if self.room == "hall" and self.has_key:
                self.unlocked = True
                msg, reward = "The door unlocks.", 0.6
            else:
                msg = "You cannot unlock anything here."
        elif cmd == "exit":
            if self.room == "hall" and self.unlocked:
                msg, reward, done = "You leave the house. Freedom!", 1.0, True
            else:
                msg = "The way out is locked."
        else:
            msg = "I don't understand."
        truncated = not done and self.turn >= self.max_turns
        return msg, reward, done, truncated, {"room": self.room}

    def solution(self):
        return ["\\boxed{go %s}" % self.key_room, "\\boxed{take key}", "\\boxed{go hall}", "\\boxed{unlock door}", "\\boxed{exit}"]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
