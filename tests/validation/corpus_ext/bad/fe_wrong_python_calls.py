"""Unsound, written elsewhere: a small file system with cd / ls / cat tools on the reference
``ToolUseBaseEnv`` (unimported), whose ``solution()`` writes its tool calls in Python call
syntax, numbered, one argument positional, and answers with ``answer(...)``; the answer
counts only once the file has been read. The solution goes to the wrong folder, so its
replay never reads the file: a solution that fails, read from Python-syntax calls."""


class WrongFolderEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        rng = random.Random(seed)
        self.folder = rng.choice(["document", "photos"])
        self.file = rng.choice(["notes.txt", "todo.txt", "plan.txt"])
        self.code = str(rng.randint(1000, 9999))
        self._state = {"cwd": "/home", "read": False}
        self._tools = {
            "cd": {"description": "Change the current directory.",
                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
            "ls": {"description": "List the current directory.", "parameters": {"type": "object", "properties": {}}},
            "cat": {"description": "Print a file of the current directory.",
                    "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
        }
        self._expected_answer = self.code
        self.turn_count = 0
        return (f"The access code is in {self.file}, somewhere under /home. Read it, then answer with "
                "<answer>CODE</answer>."), {}

    def _files(self):
        if self._state["cwd"] == f"/home/{self.folder}":
            return {self.file: f"access code: {self.code}", "readme.md": "nothing here"}
        return {"readme.md": "nothing here"}

    def tool_cd(self, path):
        if path in ("/home", "/home/document", "/home/music", "/home/photos"):
            self._state["cwd"] = path
            return f"now in {path}"
        return f"no such directory: {path}"

    def tool_ls(self):
        if self._state["cwd"] == "/home":
            return "document/ music/ photos/"
        return " ".join(sorted(self._files()))

    def tool_cat(self, name):
        files = self._files()
        if name not in files:
            return f"no such file: {name}"
        if name == self.file:
            self._state["read"] = True
        return files[name]

    def _check_answer(self, answer):
        return self._state["read"] and super()._check_answer(answer)

    def solution(self):
        return (
            "Steps:\n"
            "1. cd(path='/home/music')\n"
            "2. ls()\n"
            f"3. cat('{self.file}')\n"
            f"4. answer('{self.code}')"
        )
