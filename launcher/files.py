"""Reading and writing the files a user names: the one home of the size cap, the safe reader and the safe writer.

Only regular files are read (a FIFO would hang, /dev/zero would never end), up to :data:`MAX_INPUT_BYTES`. Only regular
files are written: a FIFO, a device or a directory at the output path is refused and left untouched; a symlink is written
through to its target (atomically, by a rename next to the target), so the link stays a link. Errors are
:class:`FileRefused`, an OSError whose message is one line naming the path, the problem and the fix.

Standard library only: advisor and launcher.runtime both import it.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

# The largest file the tools read: facts files and config.json are a few KB; 16 MiB leaves room for any real one.
MAX_INPUT_BYTES = 16 * 1024 * 1024


class FileRefused(OSError):
    """A path that is not a regular file, too large, or unreadable/unwritable; ``str()`` is one line with the fix."""

    def __init__(self, message: str, code: int = errno.EINVAL) -> None:
        super().__init__(code, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


# What a file type is called in messages, in the order stat's tests are asked.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISREG, "a regular file"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit}-byte"


def read_text(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (symlinks followed).

    Raises FileNotFoundError when nothing is there (callers word that case themselves) and FileRefused otherwise."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"{path}: cannot read {what}: not UTF-8 text (byte {exc.start}); pass a text file") from None


def read_bytes(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (symlinks followed); errors as :func:`read_text`'s. The
    size is checked before reading (a sparse 2 GB file is refused at once) and again while reading."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: a terminal device must not become ours.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileRefused(f"{path}: cannot read {what} ({exc.strerror or exc})", exc.errno or errno.EIO) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{path}: the {what} is {_kind(info.st_mode)}; pass a regular file")
        if info.st_size > limit:
            raise FileRefused(
                f"{path}: the {what} is {info.st_size} bytes, over the {_size(limit)} limit; pass the real file",
                errno.EFBIG,
            )
        chunks, total = [], 0
        while True:  # read to the end, but never past the limit (the file may grow while we read)
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileRefused(
                    f"{path}: the {what} is over the {_size(limit)} limit; pass the real file", errno.EFBIG
                )
    except FileRefused:
        raise
    except OSError as exc:
        raise FileRefused(f"{path}: cannot read {what} ({exc.strerror or exc})", exc.errno or errno.EIO) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def expand_user(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; FileRefused when that user has no home directory here
    (pathlib raises RuntimeError)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        user = os.fspath(path).split(os.sep, 1)[0]
        raise FileRefused(f"{os.fspath(path)}: {user} names no user with a home directory here; write the full path") from None


def output_target(path: str | os.PathLike[str], what: str = "file") -> Path:
    """Where writing ``path`` lands: the path itself, or a symlink's final target. Refuses (FileRefused) a path that
    exists and is not a regular file, a path written as a directory (ending in /), and a missing parent directory.
    Nothing is written."""
    if os.fspath(path).endswith(os.sep):  # "out/" names a directory: never write a file called "out" for it
        raise FileRefused(f"{os.fspath(path)}: the path ends in {os.sep}, so it names a directory; add a file name")
    path = expand_user(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise FileRefused(f"{path}: cannot write {what} ({exc.strerror or exc})", exc.errno or errno.EIO) from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        where = f"{path} (a link to {target})" if target != path else str(path)
        raise FileRefused(f"{where}: the output is {_kind(info.st_mode)}, not a regular file; choose a writable file path")
    parent = target.parent
    if not parent.is_dir():
        raise FileRefused(f"{path}: cannot write {what}: the directory {parent} does not exist; create it or choose a writable path",
                          errno.ENOENT)  # fmt: skip
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str, what: str = "file") -> Path:
    """Write ``text`` to ``path`` atomically (a temporary file in the same directory, renamed over the target), so an
    interrupted write never leaves half a file. A symlink is written through; anything else that is not a regular
    file is refused. Returns the path written (a symlink's target). Raises FileRefused."""
    target = output_target(path, what)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise FileRefused(f"{path}: cannot write {what} ({exc.strerror or exc})", exc.errno or errno.EIO) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)  # replacing a file keeps its permissions
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a new file gets the usual permissions
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FileRefused(f"{path}: cannot write {what} ({exc.strerror or exc})", exc.errno or errno.EIO) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def check_directory_variable(name: str, environ: dict[str, str] | None = None) -> None:
    """An environment variable naming a directory (TP_ADVISOR_RUNS, TP_ADVISOR_CACHE) must not point at something
    else; raises FileRefused naming the variable. Unset, or not existing yet (it will be created), is fine."""
    value = (os.environ if environ is None else environ).get(name)
    if value:
        check_directory(value, name)


def check_directory(value: str, name: str) -> None:
    """A directory the tools will create or use (``name`` is the option or variable that named it, for the message):
    the first part of ``value`` that exists must be a directory. Raises FileRefused."""
    path = expand_user(value)
    for candidate in (path, *path.parents):  # the first part that exists must be a directory
        try:
            info = os.stat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there (yet), or under a file: the parent that exists says which
        except OSError as exc:
            raise FileRefused(f"{name}={value}: cannot use it ({exc.strerror or exc}); point {name} at a directory") from None
        if not stat.S_ISDIR(info.st_mode):
            where = "" if candidate == path else f" {candidate}"
            raise FileRefused(
                f"{name}={value}:{where} is {_kind(info.st_mode)}, not a directory; point {name} at a directory"
            )
        return
