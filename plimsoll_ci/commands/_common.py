"""Arguments and output shared by the commands that read withheld sets and write reports, and
the argparse types of numbers with a range (`whole`, `seconds`, `byte_count`)."""

from __future__ import annotations

import argparse
import errno
import math
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def add_key_arguments(parser: argparse.ArgumentParser) -> None:
    """`--key-env VAR` / `--key-file F`: the HMAC key of a keyed set (never on the command line)."""
    parser.add_argument("--key-env", metavar="VAR",
                        help="environment variable holding the HMAC key of a keyed set "
                             "(default: the `key:` of plimsoll.yaml)")
    parser.add_argument("--key-file", metavar="FILE",
                        help="file holding the HMAC key (keep it outside the repository; "
                             "default: the `key:` of plimsoll.yaml)")


def add_deprecated(parser: argparse.ArgumentParser, old: str, new: str, dest: str) -> None:
    """`old`, an earlier name of the flag `new` (stored in `dest`): still accepted, with one
    deprecation line on stderr naming the flag to use."""

    class Deprecated(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                     values: object, option_string: str | None = None) -> None:
            if not getattr(namespace, "_deprecation_said", False):
                print(f"plimsoll-ci: warning: {old} is deprecated; say {new} {values}",
                      file=sys.stderr)
                namespace._deprecation_said = True
            setattr(namespace, dest, values)

    parser.add_argument(old, dest=dest, action=Deprecated, metavar="FILE",
                        help=f"deprecated: {new}")


_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def byte_count(text: str) -> int:
    """A count of bytes as given on the command line: `N`, or `N` with K, M or G (powers of
    1024: `512M`), with an optional `B` or `iB` (`512MiB`)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in ("K", "M", "G") else ""
    number = t[: len(t) - len(unit)]
    if not number.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of bytes (e.g. 1000000, "
                                         "64M, 1G)")
    return int(number) * _UNITS[unit]


def whole(low: int, high: int) -> Callable[[str], int]:
    """An argparse `type` for a whole number from `low` to `high`: anything else (a word, a
    number out of range, thousands of digits) is refused, exit 2, naming the range."""

    def parse(text: str) -> int:
        t = text.strip()
        digits = t[1:] if t[:1] in ("-", "+") else t
        # a long digit string is refused before int() reads it (no seconds spent on 10^5 digits)
        if not (digits.isdigit() and digits.isascii() and len(digits) <= len(str(high)) + 1):
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: give a whole number between "
                                             f"{low} and {high}")
        value = int(t)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: give a whole number "
                                             f"between {low} and {high}")
        return value

    parse.__name__ = "whole number"
    return parse


def seconds(high: float) -> Callable[[str], float]:
    """An argparse `type` for a positive number of seconds up to `high` (not 0, not inf, not
    nan), refused otherwise (exit 2, naming the range)."""

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            value = math.nan
        if not 0 < value <= high:  # nan fails every comparison
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: give a number of seconds above 0 "
                                             f"and at most {high:g}")
        return value

    parse.__name__ = "seconds"
    return parse


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """Bounds of the scan; a bound that is hit is a note in the report."""
    g = parser.add_argument_group("bounds (a bound that is hit becomes a note; sizes in bytes, "
                                  "or with K, M, G)")
    g.add_argument("--max-file-bytes", type=byte_count, metavar="N", help="bytes read per file")
    g.add_argument("--max-decompressed", type=byte_count, metavar="N",
                   help="bytes out of one compression stream or archive member")
    g.add_argument("--max-members", type=int, metavar="N", help="members read per archive")
    g.add_argument("--max-region", type=byte_count, metavar="N",
                   help="bytes of one encoded region (base64, hex)")
    g.add_argument("--max-line", type=byte_count, metavar="N",
                   help="bytes of one line decoded for escapes and HTML entities")
    g.add_argument("--max-memory", type=byte_count, metavar="N",
                   help="the scan's memory budget (default 512M): long files and archive "
                   "members are read in windows sized to it")


LIMIT_FLAGS = ("max_file_bytes", "max_decompressed", "max_members", "max_region", "max_line",
               "max_memory")


def limit_overrides(args: argparse.Namespace) -> dict[str, int | None]:
    """The bounds given on the command line, for `scan.make_limits` (None: not given)."""
    return {k: getattr(args, k, None) for k in LIMIT_FLAGS}


def warn_set_notes(wset: object) -> None:
    """Print what loading a withheld or sealed set noted (a key given for an unkeyed set, a set
    with no entries) as warnings on stderr."""
    from plimsoll_ci.names import shown

    for n in getattr(wset, "notes", ()):
        print(f"plimsoll-ci: warning: {shown(n)}", file=sys.stderr)


def write_output(text: str, output: str | None) -> None:
    """Print, or write `output` atomically (a temp file renamed over it: never half-written).

    An `output` that exists and is not a regular file (a pipe, a device such as /dev/stdout) is
    written into, never replaced: renaming a file over /dev/null would break the machine.
    """
    if not output:
        try:
            sys.stdout.write(text)
        except UnicodeEncodeError:  # a surrogate a report let through: its bytes
            sys.stdout.flush()
            sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
        sys.stdout.flush()
        return
    from plimsoll_ci.errors import BadInput

    target = Path(output)
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        special = False  # missing (a new file) or unreadable: the atomic write says why
    if special:
        try:
            with open(target, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(text)
        except OSError as e:
            raise BadInput(f"output {output}: cannot write ({e.strerror})") from None
        return
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:
        if folder.is_dir() and e.errno in (errno.ENOENT, errno.EPERM, errno.EACCES, errno.EROFS):
            # the folder is there: ENOENT means a file system that takes no new files (/proc)
            why = {errno.ENOENT: "a special file system that takes no new files",
                   errno.EROFS: "a read-only file system"}.get(e.errno, e.strerror)
            raise BadInput(f"output {output}: cannot create a file in {folder} ({why}); give "
                           "a file path in a writable folder") from None
        raise BadInput(f"output {output}: cannot write in {folder} ({e.strerror}); give a file "
                       "path in a writable folder") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):  # a folder in the way, a full disk: bad input, not a crash
            raise BadInput(f"output {output}: cannot write ({e.strerror}); give a file path "
                           "in a writable folder") from None
        raise
