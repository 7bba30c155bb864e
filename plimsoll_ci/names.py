"""How a report shows a name (a shipped path, a decode chain, an entry id, a note, an author).

A name is whatever bytes a repository or a folder holds: a newline in it would forge a line of a
text report, an ANSI escape would drive the reader's terminal, a `|` would break a Markdown table,
and a byte that is not UTF-8 reaches JSON as a lone surrogate. `shown` escapes every control
character and undecodable byte (`\\x1b`, `\\xff`), so a report line is one line and prints as
it reads; JSON keeps the exact name recoverable beside it (`path_fields`).

Two functions, used by every command and report that prints a name (a controller, a rebuild
folder, a loop, a task, a model, a path): `shown` for a terminal, a log line or a progress bar,
and `md` for Markdown (`shown`, then every character Markdown would read as markup
backslash-escaped, so a name stays one table cell of plain text).
"""

from __future__ import annotations

import base64
import re
from typing import Any

# C0 and C1 controls, DEL, line and paragraph separators, bidirectional overrides and isolates
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def shown(text: str) -> str:
    """`text` safe to print: non-UTF-8 bytes (kept as surrogates) and control characters become
    `\\xNN` (or `\\uNNNN`) escapes, so no name can move the cursor, forge a line of a report, or
    recolour a terminal. Idempotent: what it returns has nothing left to escape.
    """
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte decoded to
        data = text.encode("utf-8", "backslashreplace")
    return _CONTROL.sub(_escape, data.decode("utf-8", "backslashreplace"))


# What Markdown (CommonMark and GitHub's tables) reads as markup inside a line: a backslash
# escape, a code span, emphasis, raw HTML or an autolink, an entity, a strikethrough, a cell
_MD_INLINE = re.compile(r"[\\`*_<>&|~]")
# a link or an image needs `](` (or `][`, or `]:` for a definition): its `]` is escaped, so the
# redaction marker `[withheld]` still reads as written
_MD_LINK = re.compile(r"\](?=[(\[:])")
# ... and at the start of a line or table cell: a heading, a list item, a setext underline, a
# task box or a link definition
_MD_LEADING = re.compile(r"^(\s*)([#+=\[-]|\d+(?=[.)]))")


def md(text: object, code: bool = False) -> str:
    """`text` safe in Markdown: one line (`shown`), and nothing read as markup, so a name
    cannot break a table (`|`), open a code span (a backtick), make a link or a heading.

    With `code`, for a name inside a code span (`` `name` ``), where a backslash is literal:
    only `|` is escaped (GitHub splits table cells before code spans) and a backtick, which
    would end the span, becomes `'`.
    """
    s = shown(str(text))
    if code:
        return s.replace("|", "\\|").replace("`", "'")
    s = _MD_LINK.sub("\\\\]", _MD_INLINE.sub(lambda m: "\\" + m.group(), s))
    m = _MD_LEADING.match(s)
    if m:  # `#` becomes `\#`; a list number `1.` becomes `1\.`
        lead, mark = m.groups()
        end = m.end()
        s = (f"{lead}\\{mark}{s[end:]}" if not mark.isdigit()
             else f"{lead}{mark}\\{s[end:]}")
    return s


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def path_fields(path: str) -> dict[str, str]:
    """A JSON report's fields for a path: `path` as shown, and `path_bytes` (the exact name's
    bytes, base64) when the shown path is not the name itself."""
    readable = shown(path)
    if readable == path:
        return {"path": path}
    raw = path.encode("utf-8", "surrogateescape") if _encodable(path) else \
        path.encode("utf-8", "backslashreplace")
    return {"path": readable, "path_bytes": base64.b64encode(raw).decode("ascii")}


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


PLAIN = "plain"  # how a report names the text as written, beside decode chains


def via(f: Any) -> list[str]:
    """Every way one leak was seen, as a report lists it: its decode chains (`plain` for the
    text as written), several when findings at overlapping places were merged."""
    return [shown(c) if c else PLAIN for c in (f.via or (f.chain,))]


def shipped_as(f: Any) -> str:
    """For a file that ships through several ship sets: `ship sets a, b; also shipped as X`."""
    if not f.sets and not f.also:
        return ""
    sets = f"ship sets {', '.join(shown(s) for s in f.sets)}" if f.sets else ""
    also = f"also shipped as {', '.join(shown(a) for a in f.also)}" if f.also else ""
    return "; ".join(x for x in (sets, also) if x)
