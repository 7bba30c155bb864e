"""Reading what a user hands us, within bounds and within the folder we were given.

Two rules of the house live here, below every package that reads input (`attest/` included):

- every read has a bound: `read_bounded` refuses a file over its limit, and anything that is not
  a regular file (a FIFO, `/dev/zero`, a socket), before reading more than the limit;
- nothing is read from outside the folder a command was given: `inside` resolves a path and
  refuses it when it, or a folder on the way, is a link that leaves that folder.

Both raise `BadInput` (exit 2) naming the file and the bound; neither ever names a file's bytes.
Every message that says a file could not be read says it one way, `cannot_read(e)`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from plimsoll_ci.errors import BadInput

MiB = 1024 * 1024


def cannot_read(e: BaseException) -> str:
    """How every message says a file could not be read: `cannot read (Permission denied)`. The
    reason is the system's (`strerror`), never the error's text, which repeats the path (a key
    file's path may be the key itself) or a decoded value; else the error's kind."""
    if isinstance(e, UnicodeDecodeError):
        reason = f"not UTF-8 at byte {e.start}"
    else:
        reason = getattr(e, "strerror", None) or e.__class__.__name__
    return f"cannot read ({reason})"


def _size(n: int) -> str:
    if n >= MiB and n % MiB == 0:
        return f"{n // MiB} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


def read_bounded(path: str | os.PathLike[str], limit: int, what: str | None = None,
                 follow: bool = True) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them.

    Refused (BadInput naming `what` or the path, and the bound): a missing or unreadable file,
    anything that is not a regular file (a FIFO is opened without blocking, a device never read),
    a file over `limit` bytes (checked before reading and again while reading, for a file that
    grows), and with `follow=False` a path that is itself a link.
    """
    name = what or str(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if not follow and os.path.islink(path):
            raise BadInput(f"{name}: is a symbolic link; give the file itself") from None
        raise BadInput(f"{name}: {cannot_read(e)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{name}: not a regular file (a device, FIFO or socket is never "
                           "read); give a file")
        if st.st_size > limit:
            raise BadInput(f"{name}: {st.st_size} bytes, over the bound of {_size(limit)}")
        os.set_blocking(fd, True)
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise BadInput(f"{name}: over the bound of {_size(limit)} (it grew while read)")
        return b"".join(chunks)
    except OSError as e:
        raise BadInput(f"{name}: {cannot_read(e)}") from None
    finally:
        os.close(fd)


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str], what: str) -> Path:
    """`path` (relative to `root`, or absolute) resolved, when it stays inside `root`.

    Refused (BadInput naming `what`): a path whose resolution, or that of any folder on the way,
    leaves `root` (a `..` or a symbolic link pointing out), and a path that does not exist.
    Links that stay inside `root` are followed.
    """
    top = Path(root).resolve()
    given = Path(path)
    full = given if given.is_absolute() else top / given
    try:
        resolved = full.resolve(strict=True)
    except FileNotFoundError:
        raise BadInput(f"{what}: {path}: no such file under {root}") from None
    except (OSError, RuntimeError) as e:  # a link loop is a RuntimeError before 3.13
        raise BadInput(f"{what}: {path}: cannot be resolved ({e})") from None
    if resolved != top and not resolved.is_relative_to(top):
        raise BadInput(f"{what}: {path} leads outside {root} (through a link or '..'); "
                       "keep it inside the folder")
    return resolved
