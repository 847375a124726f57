"""Sound, reference style: a notes app operated through two tools of a
``ToolUseBaseEnv`` subclass (not imported); the answer is a word read back from a note."""


class NotesEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        words = ["amber", "cobalt", "ivory", "olive", "scarlet", "teal"]
        titles = ["groceries", "gym", "meeting", "trip"]
        self._state = {"notes": {t: rng.choice(words) for t in titles}}
        self.title = rng.choice(titles)
        self._tools = {
            "list_notes": {"description": "Titles of the notes.", "parameters": {"type": "object", "properties": {}}},
            "read_note": {
                "description": "The text of one note.",
                "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
            },
        }
        self._expected_answer = self._state["notes"][self.title]
        self.turn_count = 0
        return f"Which colour is written in the note titled '{self.title}'? Reply <answer>colour</answer>.", {}

    def tool_list_notes(self):
        return ", ".join(self._state["notes"])

    def tool_read_note(self, title):
        return self._state["notes"].get(title, f"no note titled {title}")

    def solution(self):
        read = json.dumps({"name": "read_note", "arguments": {"title": self.title}})
        return f"<tool_call>{read}</tool_call> <answer>{self._expected_answer}</answer>"
