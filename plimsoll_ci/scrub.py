"""Scrubbing credentials out of what is written: an API key however an endpoint reflects it.

An endpoint, or a gateway in front of it, may echo the `Authorization` header it got: in a reply's
text, in a tool call's name or arguments, in an error message, base64-encoded inside something
else. `Scrubber` replaces every such reflection with `[redacted]` before anything is recorded:

    scrub = Scrubber(["sk-proj-..."])
    scrub.bytes(body)            # plain, JSON-escaped (`\\u0073k-`, `\\/`), base64 (standard and
    scrub.text(message)          # URL-safe, at any of the three alignments inside a longer run)

A value shorter than `MIN_SECRET` characters is not a credential a service issues (a local server
that needs no key takes any value, e.g. `x`) and is left alone: scrubbing it would wreck every
reply. Other encodings (hex, percent-encoding, split or reversed text) are out of scope.

`streaming` gives a scrubbing writer for a body that arrives in pieces: it holds back the longest
possible reflection's length, so a key cut across two pieces is still found.

It lives below every package (the model client, the recording proxy) so both scrub alike.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable

REDACTED = "[redacted]"
MIN_SECRET = 8
_SPECIAL = {'"': rb'\\"', "\\": rb"\\\\", "/": rb"\\/"}


def _char(c: str) -> bytes:
    """A pattern for one ASCII character as JSON may write it: itself or an escape of it."""
    hexes = f"{ord(c):04x}"
    escaped = rb"\\u" + b"".join(b"[%s%s]" % (h.encode(), h.upper().encode()) if h.isalpha()
                                 else h.encode() for h in hexes)
    forms = [re.escape(c.encode("latin-1")), escaped]
    if c in _SPECIAL:
        forms.append(_SPECIAL[c])
    return b"(?:" + b"|".join(forms) + b")"


def _base64_cores(secret: bytes) -> set[bytes]:
    """The base64 characters that depend on `secret`'s bytes alone, at each of the three
    alignments it can have inside a longer encoded run, in both alphabets."""
    cores = set()
    for lead in range(3):
        encoded = base64.b64encode(b"\0" * lead + secret).rstrip(b"=")
        first = -(-lead * 8 // 6)
        last = (lead + len(secret)) * 8 // 6
        core = encoded[first:last]
        if len(core) >= MIN_SECRET:
            cores.add(core)
            cores.add(core.translate(bytes.maketrans(b"+/", b"-_")))
    return cores


def _secret_values(values: Iterable[str]) -> list[str]:
    out = set()
    for v in values:
        for word in (v or "").split():  # "Bearer KEY": the key alone is what an echo carries
            if len(word) >= MIN_SECRET and all(0x21 <= ord(c) <= 0x7E for c in word):
                out.add(word)
    return sorted(out, key=len, reverse=True)


class Scrubber:
    """Replaces every reflection of the given credentials (see the module doc)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        words = _secret_values(secrets)
        forms: set[bytes] = set()
        for w in words:
            raw = w.encode("ascii")
            forms.add(raw)
            forms |= _base64_cores(raw)
        patterns = [b"".join(_char(chr(b)) for b in f)
                    for f in sorted(forms, key=len, reverse=True)]
        self._pattern = re.compile(b"|".join(patterns)) if patterns else None
        # a match is at most 6 bytes per character (`\u0041`)
        self.longest = 6 * max((len(f) for f in forms), default=0)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def bytes(self, data: bytes) -> bytes:
        """`data` with every reflection replaced by `[redacted]`."""
        if self._pattern is None or not data:
            return data
        return self._pattern.sub(REDACTED.encode(), data)

    def text(self, text: str) -> str:
        """`text` with every reflection replaced by `[redacted]`."""
        if self._pattern is None or not text:
            return text
        return self.bytes(text.encode("utf-8", "surrogatepass")).decode("utf-8", "surrogatepass")

    def __repr__(self) -> str:
        return f"Scrubber({REDACTED})"


def streaming(scrub: Scrubber, write: Callable[[bytes], None]) -> Callable[[bytes | None], None]:
    """A writer of pieces through `scrub` into `write`; call it with None once at the end.

    It holds back `scrub.longest - 1` bytes so a reflection cut between two pieces is whole when
    it is scrubbed; what it held is written at the end."""
    pending = b""

    def feed(piece: bytes | None) -> None:
        nonlocal pending
        if not scrub:
            if piece:
                write(piece)
            return
        if piece is None:
            if pending:
                write(scrub.bytes(pending))
            pending = b""
            return
        pending = scrub.bytes(pending + piece)
        keep = scrub.longest - 1
        if len(pending) > keep:
            ready, pending = pending[:-keep] if keep else pending, pending[-keep:] if keep else b""
            write(ready)

    return feed
