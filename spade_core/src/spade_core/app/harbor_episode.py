r"""A Harbor task's container side: one episode played by the agent, owned by the verifier
(docs/harbor.md, "Who owns the episode").

The agent plays through ``spade-episode start | step ACTION | show`` as the user ``agent``.
That command holds nothing of the environment: it asks, through ``sudo``, for the one
root command ``spade-episode-root`` (:data:`ROOT_COMMAND`), which runs :func:`main`'s
``episode``. Only root reads the task's folder (:data:`TASK_HOME`: the code, its seed, the
record key) and the episode's state (:data:`STATE_FILE`), so the agent can neither read the
code (nor run it to find the answer offline), nor restart the episode, nor edit what was
played:

* the state is root's: ``start`` is refused once an episode exists, whatever the agent did
  to the copy it sees; every command replays the recorded actions from the seed in SPADE's
  sandbox, then takes the new one;
* each command publishes the record to :data:`EPISODE_FILE` (Harbor's artifacts folder,
  which Harbor carries to the verifier's container), signed: an HMAC-SHA256 under the
  task's record key (:data:`KEY_NAME`, made at export, kept in the root-only task folder and
  in the verifier's ``tests/``);
* the verifier (:func:`verify`, ``tests/test.sh``) scores a record only when its signature
  holds, and then re-plays its *actions* from the seed in a fresh sandbox (recorded rewards
  and observations are not believed): an edited, replaced or unsigned record scores 0.

There is no ``solve`` command: the reference solution is the oracle's, written at export
into ``solution/`` (which Harbor gives the oracle agent only), and plays through
``spade-episode`` like any agent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpadeError
from ..metadata import EnvMetadata
from ..returns import episode_return
from .atif import episode_turn, trajectory_from_episode
from .dataset_files import load_json, read_text_bounded
from .file_writes import write_inside

if TYPE_CHECKING:
    from ..env import TextEnv

#: Where the task's ``environment/spade/`` lands in the container (root-only).
TASK_HOME = "/opt/spade-task"
#: The episode's state, root's own (``start`` is refused once it exists).
STATE_FILE = "/var/lib/spade-episode/episode.json"
#: The signed record, inside Harbor's artifacts folder (collected after the agent's turn and
#: restored in the verifier's container).
EPISODE_FILE = "/logs/artifacts/spade-episode.json"
#: The root command ``spade-episode`` runs through ``sudo``.
ROOT_COMMAND = "/usr/local/sbin/spade-episode-root"
#: The record key's file, in the task's folder and in the verifier's ``tests/spade/``.
KEY_NAME = "episode.key"
VERIFIER_KEY = f"/tests/spade/{KEY_NAME}"
#: Where Harbor reads the verifier's reward, and where the replayed episode's ATIF goes.
REWARD_FILE = "/logs/verifier/reward.txt"
TRAJECTORY_FILE = "/logs/verifier/trajectory.json"
#: Largest episode file read.
MAX_EPISODE_BYTES = 1_000_000


class HarborError(SpadeError):
    """A Harbor task or episode cannot be written, read or played; the message says why."""


# --- the record ------------------------------------------------------------------------------


def _canonical(record: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in record.items() if k != "mac"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(record: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """``record`` with its ``mac``: HMAC-SHA256 of its canonical JSON under ``key``."""
    return {**{k: v for k, v in record.items() if k != "mac"},
            "mac": hmac.new(key, _canonical(record), hashlib.sha256).hexdigest()}


def signed_by(record: Mapping[str, Any], key: bytes) -> bool:
    """Whether ``record`` carries the ``mac`` ``key`` gives it (compared in constant time)."""
    mac = record.get("mac")
    expected = hmac.new(key, _canonical(record), hashlib.sha256).hexdigest()
    return isinstance(mac, str) and hmac.compare_digest(mac, expected)


def read_key(path: Path) -> bytes:
    """The record key in ``path`` (hex text)."""
    try:
        return bytes.fromhex(read_text_bounded(path, 1024, str(path)).strip())
    except (OSError, ValueError) as exc:
        raise HarborError(f"cannot read the record key {path}: {exc}") from None


def read_episode(path: Path) -> dict[str, Any]:
    """An episode file; :class:`HarborError` when it is not one."""
    try:
        text = read_text_bounded(path, MAX_EPISODE_BYTES, str(path))
    except OSError as exc:
        raise HarborError(f"cannot read the episode file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise HarborError(str(exc)) from None
    try:
        data = load_json(text)
    except ValueError as exc:
        raise HarborError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != "spade-episode" or not isinstance(data.get("turns"), list):
        raise HarborError(f"{path} is not a SPADE episode file")
    return data


def _write_json(path: Path, value: Any) -> None:
    write_inside(path.parent, path.name, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


# --- the environment -----------------------------------------------------------------------


@dataclass
class TaskEnvironment:
    """The environment of a task, as the container holds it (``TASK_HOME``)."""

    source: str
    metadata: EnvMetadata
    seed: int
    allowed_modules: tuple[str, ...]

    @classmethod
    def load(cls, folder: Path) -> TaskEnvironment:
        try:
            source = (folder / "env.py").read_text(encoding="utf-8")
            metadata = EnvMetadata.model_validate_json((folder / "metadata.json").read_text(encoding="utf-8"))
            runtime = json.loads((folder / "runtime.json").read_text(encoding="utf-8"))
            seed, allowed = int(runtime.get("seed", 0)), tuple(str(m) for m in runtime.get("allowed_modules", ()))
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise HarborError(f"the task's environment under {folder} cannot be read: {exc}") from None
        return cls(source, metadata, seed, allowed)

    def open(self) -> TextEnv:
        """The environment in SPADE's sandbox (the configuration's ``[spade.sandbox]``)."""
        from ..config import load_config
        from ..plugins import get_plugins

        runner = get_plugins().env_runners().get("sandbox")
        if runner is None:
            raise HarborError("spade-sandbox is not installed here: the environment runs only in its sandbox")
        m = self.metadata
        env: TextEnv = runner.make_env(
            self.source,
            max_turns=m.max_turns,
            allowed_modules=self.allowed_modules,
            reward_range=m.reward_range,
            class_name=m.class_name,
            render_mode=None,
            sandbox=load_config().sandbox,
        )
        return env


def reference_actions(task: TaskEnvironment) -> tuple[list[str], str | None]:
    """The actions the environment's own ``solution()`` gives at the task's seed (run in the
    sandbox, after its reset), for the oracle's ``solve.sh``; ``([], why)`` when there are
    none (no ``solution()``, or it failed)."""
    try:
        env = task.open()
    except SpadeError as exc:
        return [], f"the environment cannot be opened here: {exc}"
    try:
        env.reset(seed=task.seed)
        solution = env.solution()  # type: ignore[attr-defined]
    except NotImplementedError:
        return [], "the environment provides no solution()"
    except Exception as exc:  # the environment's own failure: the oracle has no solution
        return [], f"solution() failed: {type(exc).__name__}: {exc}"
    finally:
        env.close()
    actions = solution if isinstance(solution, list) else [solution]
    if not actions or not all(isinstance(a, str) for a in actions):
        return [], "solution() gave no list of text actions"
    return list(actions), None


class Episode:
    """One episode of a task, replayed from its recorded actions on every command (each
    command is a process of its own; the environment is seeded, so a replay reaches the
    same state, and a replay that does not is an error)."""

    def __init__(self, task: TaskEnvironment, record: dict[str, Any] | None = None) -> None:
        from .play import PlaySession

        self.task = task
        self.record = record
        self.env = task.open()
        self.session = PlaySession(self.env, task.metadata.action_format, task.seed)

    def close(self) -> None:
        self.env.close()

    @property
    def turns(self) -> list[dict[str, Any]]:
        return self.record["turns"] if self.record else []

    @property
    def over(self) -> bool:
        t = self.turns
        return bool(t) and (t[-1]["terminated"] or t[-1]["truncated"] or len(t) >= self.task.metadata.max_turns)

    def start(self) -> str:
        first = self.session.reset()
        if self.record is None:
            self.record = {
                "format": "spade-episode",
                "version": 2,
                "env_id": self.task.metadata.id,
                "seed": self.task.seed,
                "first_observation": first.observation,
                "turns": [],
            }
        elif first.observation != self.record["first_observation"]:
            raise HarborError("the environment did not start as recorded (is it nondeterministic?)")
        return first.observation

    def replay(self, *, check: bool = True) -> None:
        """Start and take every recorded action again."""
        self.start()
        for i, turn in enumerate(self.turns, 1):
            done = self._step(turn["action"], i - 1)
            if check and done["observation"] != turn["observation"]:
                raise HarborError(f"turn {i} did not replay as recorded (is the environment nondeterministic?)")

    def _step(self, text: str, played: int) -> dict[str, Any]:
        # Straight to the environment: a typed line starting with ':' is a command of
        # ``spade play`` (:solution reveals the answer), never of an agent's episode.
        action = self.session.to_action(text.strip())
        try:
            obs, reward, terminated, truncated, _info = self.env.step(action)
        except SpadeError as exc:
            raise HarborError(f"the environment failed: {exc}") from None
        terminated, truncated = bool(terminated), bool(truncated)
        at_limit = played + 1 >= self.task.metadata.max_turns
        return {
            "action": action,
            "observation": str(obs),
            "reward": float(reward),
            "terminated": terminated,
            "truncated": truncated or (at_limit and not terminated),
        }

    def step(self, action: str) -> dict[str, Any]:
        if self.over:
            raise HarborError("the episode is over (spade-episode show prints it)")
        turn = self._step(action, len(self.turns))
        self.turns.append(turn)
        return turn


# --- the commands ------------------------------------------------------------------------------


def _print_turn(n: int, turn: Mapping[str, Any], out: Callable[[str], None]) -> None:
    from ..terminal import printable

    out(f"--- turn {n}: {printable(turn['action'])}")
    out(printable(turn["observation"]))
    flags = [f for f in ("terminated", "truncated") if turn[f]]
    out(f"reward {turn['reward']:g}" + (f" ({', '.join(flags)}: the episode is over)" if flags else ""))


def play_command(task_dir: Path, state_file: Path, episode_file: Path, command: str, action: str | None,
                 out: Callable[[str], None]) -> int:
    """``spade-episode start | step ACTION | show``, as root: the episode is ``state_file``'s
    (root's), and each change is published, signed, to ``episode_file``."""
    from ..terminal import printable

    task = TaskEnvironment.load(task_dir)
    record = read_episode(state_file) if state_file.exists() or state_file.is_symlink() else None
    if command == "show":
        if record is None:
            out("no episode yet: spade-episode start")
            return 0
        out(printable(record["first_observation"]))
        for n, turn in enumerate(record["turns"], 1):
            _print_turn(n, turn, out)
        return 0
    if command == "start" and record is not None:
        raise HarborError("the episode has started already and cannot be restarted: one episode per trial "
                          "(spade-episode show prints it)")
    if command == "step" and record is None:
        raise HarborError("no episode yet: spade-episode start")
    if command not in ("start", "step"):
        raise HarborError(f"unknown command {command!r} (spade-episode start | step ACTION | show)")
    if command == "step" and (not action or not action.strip()):
        raise HarborError("spade-episode step needs an action")
    key = read_key(task_dir / KEY_NAME)
    episode = Episode(task, record)
    try:
        if command == "start":
            out(printable(episode.start()))
        else:
            episode.replay()
            turn = episode.step(action or "")
            _print_turn(len(episode.turns), turn, out)
    finally:
        episode.close()
    signed = sign(episode.record or {}, key)
    _write_json(state_file, signed)  # root's own, first: a failed publish leaves it authoritative
    _write_json(episode_file, signed)
    return 0


def verify(task_dir: Path, key_file: Path, episode_file: Path, reward_file: Path, trajectory_file: Path | None,
           say: Callable[[str], None] = lambda _: None) -> float:
    """Score the signed record: replay its actions from the seed in a fresh sandbox and write
    the episode's return to ``reward_file`` (0 when there is no record, its signature does not
    hold, or it cannot be replayed; ``say`` is told why)."""
    ret = 0.0
    try:
        task = TaskEnvironment.load(task_dir)
        if not (episode_file.exists() or episode_file.is_symlink()):
            say("no episode was played: reward 0")
            return ret
        if episode_file.is_symlink() or not episode_file.is_file():
            say(f"{episode_file} is not a plain file (a link, a pipe...): reward 0")
            return ret
        record = read_episode(episode_file)
        if not signed_by(record, read_key(key_file)):
            say("the episode record is not the one spade-episode signed (edited, replaced or unsigned): reward 0")
            return ret
        actions = [episode_turn(t).action for t in record["turns"]][: task.metadata.max_turns]
        episode = Episode(task)
        try:
            episode.start()
            for action in actions:
                if episode.over:
                    break
                episode.step(action)
        finally:
            episode.close()
        replayed = episode.record or {}
        last = replayed["turns"][-1] if replayed.get("turns") else None
        ret = episode_return(last["reward"] if last else None, bool(last and last["terminated"]), error=HarborError)
        if trajectory_file is not None:
            _write_json(trajectory_file, trajectory_from_episode(replayed, task.metadata.id))
    except HarborError as exc:  # a record that cannot be read or replayed scores 0, saying why
        ret = 0.0
        say(f"{exc}: reward 0")
    finally:
        write_inside(reward_file.parent, reward_file.name, f"{ret}\n")
    return ret


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m spade_core.app.harbor_episode episode ... | verify ...`` (the task's
    root command and its verifier)."""
    import argparse

    parser = argparse.ArgumentParser(prog="spade-episode", description="Play or verify a SPADE Harbor task's episode.")
    sub = parser.add_subparsers(dest="what", required=True)
    play = sub.add_parser("episode", help="play the episode (as root, through spade-episode)")
    play.add_argument("--task", type=Path, default=Path(TASK_HOME))
    play.add_argument("--state", type=Path, default=Path(STATE_FILE))
    play.add_argument("--episode", type=Path, default=Path(EPISODE_FILE))
    play.add_argument("command", choices=["start", "step", "show"])
    play.add_argument("action", nargs="*")
    check = sub.add_parser("verify", help="check and replay the recorded episode, and write its reward")
    check.add_argument("--task", type=Path, default=Path(TASK_HOME))
    check.add_argument("--key", type=Path, default=Path(VERIFIER_KEY))
    check.add_argument("--episode", type=Path, default=Path(EPISODE_FILE))
    check.add_argument("--reward", type=Path, default=Path(REWARD_FILE))
    check.add_argument("--trajectory", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        if args.what == "verify":
            ret = verify(args.task, args.key, args.episode, args.reward, args.trajectory,
                         say=lambda why: print(why, file=sys.stderr))
            print(f"reward {ret:g}")
            return 0
        return play_command(args.task, args.state, args.episode, args.command, " ".join(args.action) or None, print)
    except SpadeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


__all__ = [
    "EPISODE_FILE",
    "KEY_NAME",
    "REWARD_FILE",
    "ROOT_COMMAND",
    "STATE_FILE",
    "TASK_HOME",
    "TRAJECTORY_FILE",
    "VERIFIER_KEY",
    "Episode",
    "HarborError",
    "TaskEnvironment",
    "play_command",
    "read_episode",
    "reference_actions",
    "sign",
    "signed_by",
    "verify",
]


if __name__ == "__main__":
    sys.exit(main())
