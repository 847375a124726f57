"""Sound, reference style: a crafting game whose observation is the inventory as JSON
(``json`` and ``copy`` used without importing them)."""

RECIPES = {
    "plank": {"log": 1},
    "stick": {"plank": 1},
    "table": {"plank": 3, "stick": 1},
    "torch": {"stick": 1, "coal": 1},
}


class CraftingEnv:
    def reset(self, seed=None):
        self.over = False
        rng = random.Random(seed)
        self.goal = rng.choice(["table", "torch"])
        self.inv = {"log": 5, "coal": 1}
        self.start = copy.deepcopy(self.inv)
        self.turn = 0
        return f"Goal: craft a {self.goal}. Craft with \\boxed{{ITEM}}. Inventory: {json.dumps(self.inv, sort_keys=True)}", {}

    def _play(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*([a-z]+)\s*\}", action)
        item = m.group(1) if m else None
        if item not in RECIPES:
            return f"Unknown recipe. Inventory: {json.dumps(self.inv, sort_keys=True)}", 0.0, False, self.turn >= 20, {}
        need = RECIPES[item]
        if any(self.inv.get(k, 0) < n for k, n in need.items()):
            return f"Missing ingredients for {item}. Inventory: {json.dumps(self.inv, sort_keys=True)}", 0.0, False, self.turn >= 20, {}
        for k, n in need.items():
            self.inv[k] -= n
        self.inv[item] = self.inv.get(item, 0) + 1
        if item == self.goal:
            return f"You crafted the {item}!", 1.0, True, False, {}
        return f"Crafted {item}. Inventory: {json.dumps(self.inv, sort_keys=True)}", 0.0, False, self.turn >= 20, {}

    def solution(self):
        if self.goal == "table":
            return ["\\boxed{plank}"] * 4 + ["\\boxed{stick}", "\\boxed{table}"]
        return ["\\boxed{plank}", "\\boxed{stick}", "\\boxed{torch}"]

    def step(self, action):
        # A step after the end changes nothing: the episode stays over and pays nothing.
        if self.over:
            return "The episode is over; call reset().", 0.0, True, False, {}
        obs, reward, terminated, truncated, info = self._play(action)
        self.over = terminated or truncated
        return obs, reward, terminated, truncated, info
