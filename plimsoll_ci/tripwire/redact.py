"""What the tripwire prints never carries a sealed value.

A value may sit in something that is itself printed: a file or folder name, a JSON key in a
pointer, a part or header name. Every such segment is printed as `[withheld]` (the ship scan's
`plimsoll_ci.scan.REDACTED`), also when the value in it is encoded.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from plimsoll_ci.scan import REDACTED, Finding, Limits, Scanner
from plimsoll_ci.withheld import WithheldSet

_PRINTED_SEPARATORS = re.compile(r"(/| > |: | \(|\))")


def redactor(wset: WithheldSet, limits: Limits | None = None) -> Callable[[str], str]:
    """A function that redacts, in a string to be printed (a path, a place, a note), every
    segment that carries a sealed value -- a file or folder name, a JSON key in a pointer, a part
    or header name -- as `[withheld]`, so that no report prints a value."""
    scanner = Scanner(wset, limits)
    clean: dict[str, bool] = {}

    def is_clean(segment: str) -> bool:
        if segment not in clean:
            # scan_name undoes one layer of encoding as well: an encoded value is redacted too
            clean[segment] = not segment.strip() or not scanner.scan_name(segment)
        return clean[segment]

    def redact(text: str) -> str:
        parts = _PRINTED_SEPARATORS.split(text)
        return "".join(p if i % 2 or is_clean(p) else REDACTED for i, p in enumerate(parts))

    return redact


def redact_all(findings: list[Finding], notes: list[str], wset: WithheldSet,
               limits: Limits | None = None) -> tuple[list[Finding], list[str]]:
    """Findings and notes with every value-carrying segment of their paths and places redacted."""
    redact = redactor(wset, limits)
    return ([f._replace(path=redact(f.path), chain=redact(f.chain)) for f in findings],
            [redact(n) for n in notes])
