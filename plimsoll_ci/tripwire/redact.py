"""What the tripwire prints never carries a sealed value.

A value may sit in something that is itself printed: a file or folder name, a JSON key in a
pointer, a header, form field or multipart part name. Every such segment of a printed path, place,
detail or note is printed as `[withheld]` (the ship scan's `plimsoll_ci.scan.REDACTED`), also when
the value in it is encoded, and the kind of place stays readable: `header [withheld]`,
`field 0 [withheld]`, `part [withheld] filename`. A JSON key is redacted on its decoded segments
and then escaped again (`/runs~1[withheld]~1log`), so a pointer escape (`~1`, `~0`) never glues a
character onto a value and hides it. A value that spans separators is caught by a last check of
the whole printed text, which is then withheld whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from plimsoll_ci.engine import Finding, Limits, Scanner
from plimsoll_ci.scan import REDACTED
from plimsoll_ci.tripwire.reader import pointer_escape
from plimsoll_ci.withheld import WithheldSet

_PRINTED_SEPARATORS = re.compile(r"(/| > |: | \(|\))")
# the reader's places that print a name: the words around the name say what kind of place it is
_NAMED_PLACE = re.compile(r"(header |part |field \d+ |line \d+ )(.+?)( name| filename)?", re.S)


def pointer_unescape(token: str) -> str:
    """A JSON key from its pointer reference token (RFC 6901: `~1` is `/`, then `~0` is `~`)."""
    return token.replace("~1", "/").replace("~0", "~")


def redactor(wset: WithheldSet, limits: Limits | None = None) -> Callable[[str], str]:
    """A function that redacts, in a string to be printed (a path, a place, a detail, a note),
    every segment that carries a sealed value, so that no report prints a value."""
    scanner = Scanner(wset, limits)
    names: dict[str, bool] = {}
    done: dict[str, str] = {}

    def carries(segment: str) -> bool:
        if segment not in names:
            # scan_name undoes one layer of encoding as well: an encoded value is redacted too
            names[segment] = bool(segment.strip()) and bool(scanner.scan_name(segment))
        return names[segment]

    def segment(seg: str) -> str:
        key = pointer_unescape(seg) if "~" in seg else seg
        if not carries(seg) and not carries(key):
            return seg
        if key != seg:  # a JSON key in a pointer: redact its own parts, then escape again
            out = "~1".join(REDACTED if carries(p) else pointer_escape(p)
                            for p in key.split("/"))
            return REDACTED if carries(pointer_unescape(out)) else out
        m = _NAMED_PLACE.fullmatch(seg)
        if m and not carries(m.group(1) + (m.group(3) or "")):
            return m.group(1) + REDACTED + (m.group(3) or "")
        return REDACTED

    def redact(text: str) -> str:
        if text not in done:
            parts = _PRINTED_SEPARATORS.split(text)
            out = "".join(p if i % 2 else segment(p) for i, p in enumerate(parts))
            # a value across separators is in no one segment: then the whole text is withheld
            done[text] = REDACTED if scanner.scan_text(out, "") else out
        return done[text]

    return redact


def redact_all(findings: list[Finding], notes: list[str], wset: WithheldSet,
               limits: Limits | None = None) -> tuple[list[Finding], list[str]]:
    """Findings and notes with every value-carrying segment of their paths, places and details
    redacted."""
    redact = redactor(wset, limits)
    return ([f._replace(path=redact(f.path), chain=redact(f.chain), detail=redact(f.detail))
             for f in findings], [redact(n) for n in notes])
