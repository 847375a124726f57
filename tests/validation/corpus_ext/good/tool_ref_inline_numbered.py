"""Sound, written elsewhere: a recipe archive on the reference ``ToolUseBaseEnv``
(unimported) with drawer / note / list / read tools; its ``solution()`` is a numbered list
of calls written on ONE line, as the reference's own prompt examples write them, ending
with an ``<answer>`` tag. The oven temperature counts only once its card was read."""

RECIPES = {
    "bread": 220, "scones": 200, "lasagne": 190, "meringue": 100, "pizza": 250, "flapjack": 170,
}


class RecipeArchiveEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        names = sorted(RECIPES)
        rng.shuffle(names)
        self.drawers = {"A": names[:3], "B": names[3:]}
        self.dish = rng.choice(names)
        self.drawer = "A" if self.dish in self.drawers["A"] else "B"
        self._state = {"open": None, "read": set(), "notes": []}
        self._tools = {
            "open_drawer": {"description": "Open drawer A or B of the card index.",
                            "parameters": {"type": "object", "properties": {"label": {"type": "string"}},
                                           "required": ["label"]}},
            "take_note": {"description": "Write a note to yourself.",
                          "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                                         "required": ["text"]}},
            "list_cards": {"description": "List the cards of the open drawer.",
                           "parameters": {"type": "object", "properties": {}}},
            "read_card": {"description": "Read one card of the open drawer.",
                          "parameters": {"type": "object", "properties": {"title": {"type": "string"}},
                                         "required": ["title"]}},
        }
        self._expected_answer = str(RECIPES[self.dish])
        self.turn_count = 0
        return (f"At what oven temperature (in C) is the {self.dish} baked? The recipe cards are in "
                "drawers A and B. Answer with <answer>DEGREES</answer>."), {}

    def tool_open_drawer(self, label):
        if label not in self.drawers:
            return f"there is no drawer {label!r}"
        self._state["open"] = label
        return f"drawer {label} is open"

    def tool_take_note(self, text):
        self._state["notes"].append(text)
        return "noted"

    def tool_list_cards(self):
        if self._state["open"] is None:
            return "open a drawer first"
        return ", ".join(self.drawers[self._state["open"]])

    def tool_read_card(self, title):
        drawer = self._state["open"]
        if drawer is None or title not in self.drawers[drawer]:
            return f"no card {title!r} in the open drawer"
        self._state["read"].add(title)
        return f"{title}: bake at {RECIPES[title]} C"

    def _check_answer(self, answer):
        return self.dish in self._state["read"] and super()._check_answer(answer)

    def solution(self):
        return (f"1. open_drawer(label='{self.drawer}') 2. take_note(text='checking') 3. list_cards() "
                f"4. read_card(title='{self.dish}') 5. <answer>{self._expected_answer}</answer>")
