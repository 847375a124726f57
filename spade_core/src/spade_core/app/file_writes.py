"""Writing files into a folder without following links: the one writer of the exports
(a folder of environments, Harbor tasks, ATIF trajectories) and of a Harbor task's
container side.

A target folder may hold links someone else planted (an export written with ``--force``
into a folder another user can write to; ``/logs/artifacts`` of a task's container, which
its agent can write to). Following one writes outside the folder: before, ``spade export
--to-harbor DIR --force`` wrote through a link planted in ``DIR``. :func:`write_inside`
walks from the folder to the file one name at a time, each folder opened relative to the
previous one with ``O_NOFOLLOW`` (created when missing), writes a new temporary file there
(``O_EXCL | O_NOFOLLOW``: never an existing file or a link) and renames it over the file's
name. A link met on the way, or at the file's own name, is refused with
:class:`LinkRefused`: this module writes through no link and replaces none that it did not
make. The folder itself is taken as named (its own path may hold the links its owner made).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

from ..errors import SpadeError

__all__ = ["LinkRefused", "write_inside"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class LinkRefused(SpadeError):
    """A path a writer was to write through, or over, is a link it did not make (or not
    what the writer makes there: a folder where a file goes, a file where a folder goes)."""


def _names(rel: str | PurePosixPath) -> list[str]:
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{str(rel)!r} is not a relative path of plain names")
    return list(parts)


def _refusal(where: Path, what: str) -> LinkRefused:
    return LinkRefused(f"{where} is {what}; nothing is written through or over it (remove it, or write elsewhere)")


def _enter(fd: int, name: str, where: Path) -> int:
    """The folder ``name`` under the open folder ``fd``, opened without following a link;
    made when missing."""
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass  # made meanwhile (or a dangling link: the next open says which)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                raise _refusal(where, "a link" if stat.S_ISLNK(st.st_mode) else "not a folder") from None
            raise
    raise _refusal(where, "a link")


def write_inside(folder: str | Path, rel: str | PurePosixPath, data: str | bytes, *, mode: int = 0o644) -> Path:
    """Write ``data`` (text as UTF-8) to ``folder/rel`` with permissions ``mode``, whole or not
    at all, following no link (see the module doc); the path written. Raises
    :class:`LinkRefused` for a link (or a path of the wrong kind) on the way or at ``rel``;
    the folders on the way are made when missing."""
    folder = Path(folder)
    names = _names(rel)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    where = folder
    try:
        for name in names[:-1]:
            where = where / name
            inner = _enter(fd, name, where)
            os.close(fd)
            fd = inner
        final = names[-1]
        target = where / final
        tmp = f".{final[:60]}.{secrets.token_hex(6)}.tmp"
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600, dir_fd=fd)
        try:
            try:
                view = memoryview(payload)
                while view:
                    view = view[os.write(out, view):]
                os.fchmod(out, mode)
            finally:
                os.close(out)
            try:
                st = os.stat(final, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise _refusal(target, "a link" if stat.S_ISLNK(st.st_mode) else "not a file")
            os.replace(tmp, final, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except FileNotFoundError:
                pass
            raise
        return target
    finally:
        os.close(fd)
