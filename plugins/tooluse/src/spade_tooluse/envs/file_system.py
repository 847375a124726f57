"""A small file system: make a folder, move the log files into it, write an index."""

from spade_tooluse.base import ToolEnv, ToolError, Turn, call, function_schema

STEMS = ["app", "db", "cache", "auth", "worker", "cron", "api", "mail"]


def _parent(path):
    return path.rsplit("/", 1)[0] or "/"


class FileSystemEnv(ToolEnv):
    description = "You manage files on a server. Paths are absolute, like /tmp/app.log."
    advance_on = "check"
    FILES = 6
    # what an edit may change (spade_designer.knobs): files drawn for /tmp (two to four of them are logs)
    KNOBS = {"FILES": (int, 4, 8)}
    HARDER = {"FILES": "higher"}
    tools = [
        function_schema("list_dir", "Names of the files and folders directly inside a folder.", {"path": {"type": "string"}}, ["path"]),
        function_schema("read_file", "Content of a file.", {"path": {"type": "string"}}, ["path"]),
        function_schema("write_file", "Create or overwrite a file (its folder must exist).",
                        {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
        function_schema("make_dir", "Create a folder, and any missing parent folders.", {"path": {"type": "string"}}, ["path"]),
        function_schema("move", "Move a file into a folder, keeping its name.",
                        {"source": {"type": "string"}, "folder": {"type": "string"}}, ["source", "folder"]),
        function_schema("delete", "Delete a file, or an empty folder.", {"path": {"type": "string"}}, ["path"]),
    ]

    def build(self):
        rng = self.rng
        stems = rng.sample(STEMS, self.FILES)
        logs = sorted(s + ".log" for s in stems[:rng.randint(2, 4)])
        others = [s + ".tmp" for s in stems[4:]]
        files = {"/tmp/" + n: "line " + str(rng.randint(1, 99)) for n in logs + others}
        files["/home/notes.txt"] = "remember the archive"
        year = str(rng.randint(2019, 2024))
        self.state = {"dirs": ["/", "/home", "/tmp"], "files": files}
        folder = "/archive/" + year
        index = "\n".join(logs)
        return [
            Turn(user="Create the folder " + folder + ".", calls=[call("make_dir", path=folder)]),
            Turn(
                user="Move every .log file from /tmp into " + folder + ".",
                calls=[call("list_dir", path="/tmp")] + [call("move", source="/tmp/" + n, folder=folder) for n in logs],
            ),
            Turn(
                user="Write " + folder + "/INDEX.txt listing the moved file names, one per line, alphabetically, nothing else.",
                calls=[call("write_file", path=folder + "/INDEX.txt", content=index)],
            ),
        ]

    def tool_list_dir(self, path):
        path = path.rstrip("/") or "/"
        if path not in self.state["dirs"]:
            raise ToolError("no such folder: " + path)
        names = [p.rsplit("/", 1)[1] for p in self.state["files"] if _parent(p) == path]
        names += [d.rsplit("/", 1)[1] + "/" for d in self.state["dirs"] if d != "/" and _parent(d) == path]
        return sorted(names)

    def tool_read_file(self, path):
        if path not in self.state["files"]:
            raise ToolError("no such file: " + path)
        return self.state["files"][path]

    def tool_write_file(self, path, content):
        if _parent(path) not in self.state["dirs"]:
            raise ToolError("folder " + _parent(path) + " does not exist")
        if path in self.state["dirs"]:
            raise ToolError(path + " is a folder")
        self.state["files"][path] = content
        return {"written": path, "bytes": len(content)}

    def tool_make_dir(self, path):
        path = path.rstrip("/")
        if not path.startswith("/") or path in self.state["files"]:
            raise ToolError("invalid folder path " + path)
        parts = path.split("/")[1:]
        for n in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:n])
            if d not in self.state["dirs"]:
                self.state["dirs"].append(d)
        self.state["dirs"].sort()
        return {"created": path}

    def tool_move(self, source, folder):
        folder = folder.rstrip("/") or "/"
        if source not in self.state["files"]:
            raise ToolError("no such file: " + source)
        if folder not in self.state["dirs"]:
            raise ToolError("no such folder: " + folder)
        target = folder.rstrip("/") + "/" + source.rsplit("/", 1)[1]
        if target in self.state["files"]:
            raise ToolError(target + " already exists")
        self.state["files"][target] = self.state["files"].pop(source)
        return {"moved": source, "to": target}

    def tool_delete(self, path):
        if path in self.state["files"]:
            del self.state["files"][path]
            return {"deleted": path}
        if path in self.state["dirs"] and path != "/":
            if any(_parent(p) == path for p in list(self.state["files"]) + self.state["dirs"] if p != path):
                raise ToolError("folder " + path + " is not empty")
            self.state["dirs"].remove(path)
            return {"deleted": path}
        raise ToolError("no such file or folder: " + path)
