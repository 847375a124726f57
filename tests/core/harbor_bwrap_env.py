"""A Harbor environment that stands in for the container of a SPADE task, for the checks
of ``harbor_check.py`` only: it lets Harbor's own trial runner play and verify the
exported tasks on a machine without Docker. Imported by Harbor (``import_path
"harbor_bwrap_env:BwrapEnvironment"``) under the interpreter ``SPADE_HARBOR_PYTHON``
names, never by the suite itself.

What it is: each environment (the agent's, and the separate verifier's) is a folder on
this host laid out as the task's image would be, and every command Harbor runs in it runs
under ``bash -c`` in bubblewrap (``bwrap``), with new user, PID, IPC and UTS namespaces
and, for a task's ``no-network`` policy, a new network namespace holding only loopback
(``--unshare-net``), over a fresh root that holds

* ``/opt/spade-task``: the task's ``environment/spade/`` and ``requirements.txt``
  (read-only), as the Dockerfile's ``COPY`` lines put them;
* the task's own ``spade-episode`` (unchanged) and ``python`` (a two-line script running
  the SPADE Python) in ``/opt/spade-image/bin``, first on ``PATH``: not ``/usr/local/bin``
  as in the image, because ``/usr`` here is the host's, mounted read-only; the task's
  ``spade-episode-root`` in ``/opt/spade-image/sbin``;
* ``sudo`` (in ``/opt/spade-image/bin`` too): a client of a broker this environment runs on
  the host, which runs the commands the task's ``sudoers`` lets ``agent`` run as root (and
  only those: ``sudo -n`` answers any other as a password would be needed) in a ``root``
  sandbox, as the image's ``sudo`` runs them; ``/var/lib/spade-episode``, the episode's
  state, root's own;
* ``/logs/{agent,verifier,artifacts}``, ``/tests``, ``/solution``, ``/tmp``,
  ``/home/agent`` (the working folder) and ``/root``, writable, the environment's own;
* what the image keeps from ``agent`` (``/opt/spade-task``, ``/opt/spade-image/sbin``,
  ``/var/lib/spade-episode``: root's, mode 0700 there) is not mounted at all in the
  commands run as ``agent``: the one host user cannot play two users' permissions, so the
  stand-in keeps those folders out of the agent's view instead;
  Harbor uploads into them and downloads from them (the output folders are not mounted
  from the trial's folder: Harbor collects them itself, as it does from a remote sandbox),
  the copies made on the host never through a link the commands inside planted;
* read-only from the host: ``/usr`` (with ``/bin``, ``/lib``... as the host has them),
  ``/etc`` (its ``passwd`` and ``group`` replaced by ones naming ``root`` and ``agent``),
  and the folders of the SPADE Python the ``spade_python`` option names.

What it is not: the image is not built. Its ``pip install -r requirements.txt`` is played
by that SPADE Python (the repository's virtual environment), and the system beneath is the
host's, not ``python:3.11-slim``. There is one host user behind both container users:
``agent`` (uid 1000, for the agent's commands) and ``root`` (uid 0, for Harbor's and the
verifier's) are each that user mapped by a user namespace, so file ownership between them
is not enforced as in the image: what the agent must not read or write is kept out of its
view (above) instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import posixpath
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.environments.options import EnvironmentOptions
from harbor.models.task.config import NetworkMode

#: Where the task's ``environment/spade/`` lands (the export's ``TASK_HOME``).
TASK_HOME = "/opt/spade-task"
#: The root command ``spade-episode`` asks sudo for, as the image installs it.
ROOT_COMMAND = "/usr/local/sbin/spade-episode-root"
#: The Dockerfile lines this stand-in plays; a task without them is refused.
DOCKERFILE_COPIES = {f"COPY spade/ {TASK_HOME}/", "COPY spade-episode /usr/local/bin/spade-episode",
                     f"COPY spade-episode-root {ROOT_COMMAND}", "COPY sudoers /etc/sudoers.d/spade-episode"}
#: The image's own commands (``spade-episode``, ``python`` and ``sudo``), first on ``PATH``, and
#: its root command. Not ``/usr/local/...`` as in the image: ``/usr`` here is the host's, mounted
#: read-only.
BIN_DIR = "/opt/spade-image/bin"
SBIN_DIR = "/opt/spade-image/sbin"
STATE_DIR = "/var/lib/spade-episode"
#: Where the sudo broker's socket is, in both views.
SUDO_DIR = "/run/spade-sudo"
WORKDIR = "/home/agent"
USERS = {"root": (0, 0, "/root"), "agent": (1000, 1000, WORKDIR)}
#: The environment's own folders: container path -> writable.
OWN_DIRS = {
    "/logs": True,
    "/tests": True,
    "/solution": True,
    "/tmp": True,
    WORKDIR: True,
    "/root": True,
    STATE_DIR: True,
    SUDO_DIR: False,
    TASK_HOME: False,
    BIN_DIR: False,
    SBIN_DIR: False,
}
#: Root's own in the image (mode 0700): not in the agent's view at all.
ROOT_ONLY = (TASK_HOME, SBIN_DIR, STATE_DIR)
#: ``sudo`` of the image, played: a client of the environment's broker.
SUDO_CLIENT = r"""#!/bin/sh
exec python -c '
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("/run/spade-sudo/sock")
s.sendall(json.dumps({"argv": sys.argv[1:]}).encode() + b"\n")
answer = json.loads(b"".join(iter(lambda: s.recv(65536), b"")))
sys.stdout.write(answer["stdout"])
sys.stderr.write(answer["stderr"])
sys.exit(answer["rc"])
' "$@"
"""
#: The host's system folders besides ``/usr``, linked or mounted as the host has them.
SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PASSWD = (
    "root:x:0:0:root:/root:/bin/bash\n"
    f"agent:x:1000:1000::{WORKDIR}:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = "root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n"


class BwrapOptions(EnvironmentOptions):
    spade_python: str
    """The Python with SPADE installed that plays the image's ``pip install``."""


def python_dirs(python: str) -> list[str]:
    """The folders ``python`` needs: its prefixes, its ``sys.path`` and the folders of the
    installed ``spade*`` packages (editable installs may live outside ``sys.path``),
    outermost first, each one once."""
    probe = (
        "import importlib.metadata as m, importlib.util as u, json, os, sys\n"
        "dirs = [sys.prefix, sys.base_prefix, *sys.path]\n"
        "for d in m.distributions():\n"
        "    name = (d.metadata['Name'] or '').replace('-', '_')\n"
        "    spec = u.find_spec(name) if name.startswith('spade') else None\n"
        "    if spec is not None and spec.origin:\n"
        "        dirs.append(os.path.dirname(os.path.dirname(spec.origin)))\n"
        "print(json.dumps(dirs))\n"
    )
    found = json.loads(subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout)
    kept: list[str] = []
    for d in sorted({os.path.realpath(d) for d in found if d and os.path.isabs(d) and os.path.isdir(d)}):
        if not any(d == k or d.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(d)
    return kept


def _sudoers_commands(text: str) -> set[str]:
    """The commands a sudoers file lets ``agent`` run as root without a password."""
    commands: set[str] = set()
    for line in text.splitlines():
        who, _, rule = line.partition(" ")
        if who == "agent" and "NOPASSWD:" in rule:
            commands.update(c.strip().split()[0] for c in rule.split("NOPASSWD:", 1)[1].split(",") if c.strip())
    return commands


class BwrapEnvironment(BaseEnvironment):
    """A SPADE task's container, played by a folder and bubblewrap (see the module)."""

    options_model = BwrapOptions
    options: BwrapOptions

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bwrap = shutil.which("bwrap")
        self._root: Path | None = None
        self._python_dirs: list[str] = []
        self._sudo: asyncio.AbstractServer | None = None
        self._sudoers: set[str] = set()

    @staticmethod
    def type() -> str:
        return "spade-bwrap"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self) -> None:
        dockerfile = self.environment_dir / "Dockerfile"
        if not dockerfile.is_file():
            raise FileNotFoundError(f"{dockerfile} not found")
        lines = {" ".join(line.split()) for line in dockerfile.read_text().splitlines()}
        missing = DOCKERFILE_COPIES - lines
        if missing:
            raise ValueError(f"not a SPADE task image (this stand-in plays only that one): no {sorted(missing)}")

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self, force_build: bool) -> None:
        if self._bwrap is None:
            raise RuntimeError("bubblewrap's bwrap is not on PATH")
        self._python_dirs = await asyncio.to_thread(python_dirs, self.options.spade_python)
        for host in self._python_dirs:
            hidden = [own for own in OWN_DIRS if own == host or own.startswith(host.rstrip("/") + "/")]
            if hidden:
                raise RuntimeError(f"SPADE's Python needs {host}, which would hide the image's own {hidden}")
        root = Path(tempfile.mkdtemp(prefix=f"{self.session_id[:40]}-"))
        self._root = root
        for path in OWN_DIRS:
            (root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for sub in ("agent", "verifier", "artifacts"):
            (root / "logs" / sub).mkdir()
        # The Dockerfile's COPY lines; its pip install is the SPADE Python.
        shutil.copytree(self.environment_dir / "spade", root / TASK_HOME.lstrip("/"), dirs_exist_ok=True)
        shutil.copy2(self.environment_dir / "requirements.txt", root / TASK_HOME.lstrip("/") / "requirements.txt")
        bin_dir = root / BIN_DIR.lstrip("/")
        shutil.copy2(self.environment_dir / "spade-episode", bin_dir / "spade-episode")
        (bin_dir / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(self.options.spade_python)} "$@"\n')
        (bin_dir / "sudo").write_text(SUDO_CLIENT)
        shutil.copy2(self.environment_dir / "spade-episode-root", root / SBIN_DIR.lstrip("/") / "spade-episode-root")
        for folder in (bin_dir, root / SBIN_DIR.lstrip("/")):
            for script in folder.iterdir():
                script.chmod(0o755)
        self._sudoers = _sudoers_commands((self.environment_dir / "sudoers").read_text())
        self._sudo = await asyncio.start_unix_server(self._sudo_request, path=str(root / SUDO_DIR.lstrip("/") / "sock"))
        (root / "etc").mkdir()
        (root / "etc/passwd").write_text(PASSWD)
        (root / "etc/group").write_text(GROUP)
        self.logger.debug(
            f"{self.session_id}: a SPADE task image in {root}, network {self.network_policy.network_mode.value}, "
            f"SPADE from {self.options.spade_python}"
        )

    async def stop(self, delete: bool) -> None:
        if self._sudo is not None:
            self._sudo.close()
            self._sudo = None
        if delete and self._root is not None:
            await asyncio.to_thread(shutil.rmtree, self._root, True)
            self._root = None

    # --- commands ------------------------------------------------------------------------

    def _bwrap_argv(self, user: str, cwd: str, env: dict[str, str]) -> list[str]:
        assert self._root is not None and self._bwrap is not None
        uid, gid, home = USERS[user]
        argv = [
            self._bwrap, "--unshare-user", "--uid", str(uid), "--gid", str(gid),
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev",
        ]
        if self.network_policy.network_mode == NetworkMode.NO_NETWORK:
            argv.append("--unshare-net")
        argv += ["--ro-bind", "/usr", "/usr"]
        for host in SYSTEM_DIRS:
            if os.path.islink(host):
                argv += ["--symlink", os.readlink(host), host]
            elif os.path.isdir(host):
                argv += ["--ro-bind", host, host]
        argv += ["--ro-bind", "/etc", "/etc"]
        for name in ("passwd", "group"):
            argv += ["--ro-bind", str(self._root / "etc" / name), f"/etc/{name}"]
        for path, writable in OWN_DIRS.items():
            if user == "agent" and path in ROOT_ONLY:
                continue  # root's own in the image: out of the agent's view here
            argv += ["--bind" if writable else "--ro-bind", str(self._root / path.lstrip("/")), path]
        for path in self._python_dirs:
            argv += ["--ro-bind", path, path]
        argv += ["--chdir", cwd, "--clearenv"]
        settings = {
            "PATH": f"{BIN_DIR}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "USER": user,
            "LOGNAME": user,
            "LANG": "C.UTF-8",
            **env,
        }
        for key, value in settings.items():
            argv += ["--setenv", key, value]
        return argv

    def _user_name(self, user: str | int | None) -> str:
        user = self._resolve_user(user)
        if user is None or user in ("root", 0, "0"):
            return "root"
        if user in ("agent", 1000, "1000"):
            return "agent"
        raise ValueError(f"the SPADE task image has no user {user!r}")

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        if self._root is None:
            raise RuntimeError("the environment is not started")
        argv = self._bwrap_argv(
            self._user_name(user), cwd or self.task_env_config.workdir or WORKDIR, self._merge_env(env) or {}
        )
        process = await asyncio.create_subprocess_exec(
            *argv, "--", "bash", "-c", command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=timeout_sec)
        except (TimeoutError, asyncio.CancelledError):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await process.wait()
            raise
        return ExecResult(
            stdout=stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            return_code=process.returncode if process.returncode is not None else -1,
        )

    # --- sudo ----------------------------------------------------------------------------

    async def _sudo_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One ``sudo`` of a command run as ``agent``: a command the task's sudoers allows
        runs as root, in a ``root`` sandbox, from ``/``; any other is refused as ``sudo -n``
        refuses it."""
        try:
            argv = json.loads(await reader.readline())["argv"]
            while argv and argv[0].startswith("-"):  # sudo's options (the task uses -n only)
                argv = argv[1:]
            if not argv or argv[0] not in self._sudoers:
                answer = {"rc": 1, "stdout": "", "stderr": "sudo: a password is required\n"}
            else:
                command = SBIN_DIR + "/" + posixpath.basename(argv[0])
                bwrap = self._bwrap_argv("root", "/", {})
                process = await asyncio.create_subprocess_exec(
                    *bwrap, "--", command, *argv[1:], stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
                )
                stdout, stderr = await process.communicate()
                answer = {"rc": process.returncode, "stdout": stdout.decode(errors="replace"),
                          "stderr": stderr.decode(errors="replace")}
            writer.write(json.dumps(answer).encode())
            await writer.drain()
        finally:
            writer.close()

    # --- files ---------------------------------------------------------------------------
    # Copied on the host, never through a link the commands inside may have planted: a
    # path whose real location leaves the environment's folder is refused.

    def _host_path(self, path: str, *, writing: bool) -> Path:
        """Where the container path ``path`` lies on the host: only in the environment's
        own folders (writing: the writable ones)."""
        if self._root is None:
            raise RuntimeError("the environment is not started")
        norm = posixpath.normpath(str(path))
        if not norm.startswith("/"):
            raise ValueError(f"{path!r} is not an absolute container path")
        for own, writable in sorted(OWN_DIRS.items(), key=lambda kv: -len(kv[0])):
            if (norm == own or norm.startswith(own + "/")) and (writable or not writing):
                host = self._root / norm.lstrip("/")
                self._check_inside(host)
                return host
        raise ValueError(f"{path} is not in this stand-in's own folders ({', '.join(OWN_DIRS)})")

    def _check_inside(self, host: Path) -> None:
        assert self._root is not None
        real, root = os.path.realpath(host), os.path.realpath(self._root)
        if not real.startswith(root + os.sep):
            raise ValueError(f"{host} leads out of the environment (to {real})")

    def _copy_in(self, source: Path, target: Path) -> None:
        self._check_inside(target.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._check_inside(target.parent)
        if target.is_symlink():
            target.unlink()
        shutil.copy2(source, target)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self._host_path(target_path, writing=True)
        await asyncio.to_thread(self._copy_in, Path(source_path), target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        target = self._host_path(target_dir, writing=True)

        def copy() -> None:
            source = Path(source_dir)
            target.mkdir(parents=True, exist_ok=True)
            for folder, _dirs, files in os.walk(source):
                for name in files:
                    file = Path(folder) / name
                    self._copy_in(file, target / file.relative_to(source))

        await asyncio.to_thread(copy)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        source = self._host_path(source_path, writing=False)
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(shutil.copy2, source, target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        source = self._host_path(source_dir, writing=False)
        if not source.is_dir():
            raise FileNotFoundError(f"{source_dir}: no such folder in the environment")
        # Links are copied as links, not followed.
        await asyncio.to_thread(shutil.copytree, source, target_dir, symlinks=True, dirs_exist_ok=True)
