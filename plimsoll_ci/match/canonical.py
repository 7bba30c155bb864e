"""Canonical forms of withheld values and their domain-separated digests.

A value is a **number** when it reads as one (`31.5`, `3.15e1`, `0x1f`, `1_000`, `0:31.5`), else
**text**. Numbers canonicalize to their plain decimal form without sign or trailing zeros, so every
spelling of the same quantity has one digest. Text canonicalizes to ASCII-lowercase with every run
of white space collapsed to one space.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from types import ModuleType

from plimsoll_ci.match.ascii import (
    LOWER_A,
    LOWER_Z,
    NBSP,
    NINE,
    NON_ASCII,
    UNDERSCORE,
    UPPER_A,
    UPPER_Z,
    ZERO,
    lazy_re,
)

DOMAIN = b"plimsoll-ci/value/v1\0"

_DEC = rb"[0-9](?:_?[0-9])*(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9]+)?"
_INT_ALT = rb"0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"
# The patterns are compiled on first use (most runs need few of them). A whole number token
# as written in content: boundaries are checked by the extractor.
# A whole number token as written in content, compiled on first use.
number_re = lazy_re(rb"(?:" + _INT_ALT + rb"|" + _DEC + rb")")
# A clock (`0:31.5`, `1:02:03`) as written in content, compiled on first use.
clock_re = lazy_re(rb"([0-9]{1,3}):([0-5][0-9])(?::([0-5][0-9]))?(\.[0-9]+)?")
_whole_number = lazy_re(rb"[+-]?(?:" + _INT_ALT + rb"|" + _DEC + rb")")
_whole_clock = lazy_re(rb"[0-9]{1,3}:[0-5][0-9](?::[0-5][0-9])?(?:\.[0-9]+)?")
_ws = lazy_re(rb"(?:\s|" + NBSP + rb")+")


@functools.cache
def _decimal() -> ModuleType:
    """`decimal`, imported when a number is first made canonical (a hook run that meets no
    number never pays its import)."""
    import decimal

    return decimal


def number_canon(token: bytes) -> bytes | None:
    """Canonical decimal form of one number token (`0x1F` -> `31`, `31.50` -> `31.5`), or None."""
    t = token.replace(b"_", b"").lstrip(b"+-")
    dec = _decimal()
    try:
        if len(t) > 2 and t[0:1] == b"0" and t[1:2] in b"xXoObB":
            base = {b"x": 16, b"o": 8, b"b": 2}[t[1:2].lower()]
            return str(int(t[2:], base)).encode()
        if len(t) > 400:
            return None
        d = dec.Decimal(t.decode("ascii"))
    except (ValueError, dec.InvalidOperation, UnicodeDecodeError):
        return None
    if not d.is_finite() or abs(d.adjusted()) > 80:
        return None
    s = format(d.normalize(), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return (s or "0").encode()


def clock_canon(m: re.Match[bytes]) -> bytes | None:
    """Seconds of an `m:ss(.f)` or `h:mm:ss(.f)` clock match, in canonical decimal form."""
    a, b, c, frac = m.group(1), m.group(2), m.group(3), m.group(4) or b""
    dec = _decimal()
    if c is None:
        seconds = dec.Decimal(int(a) * 60 + int(b))
    else:
        seconds = dec.Decimal(int(a) * 3600 + int(b) * 60 + int(c))
    if frac:
        seconds += dec.Decimal(frac.decode())
    return number_canon(str(seconds).encode())


def text_canon(text: bytes) -> bytes:
    """ASCII-lowercase with white space runs collapsed to one space, stripped."""
    return _ws().sub(b" ", text).strip().lower()


def _is_word(c: int) -> bool:
    return (c >= NON_ASCII or ZERO <= c <= NINE or LOWER_A <= c <= LOWER_Z
            or UPPER_A <= c <= UPPER_Z)


def text_value_canon(text: bytes) -> bytes:
    """Canonical form of a text value: `text_canon`, from its first to its last word character,
    with the underscores that touch those ends kept (`"_attrs_to_script"` -> `_attrs_to_script`).

    A value is matched as a whole token run, so its ends are word characters, or underscores
    written right against them (an identifier's `_` or `__` is part of its name).
    """
    t = text_canon(text)
    i, j = 0, len(t)
    while i < j and not _is_word(t[i]):
        i += 1
    while j > i and not _is_word(t[j - 1]):
        j -= 1
    if i == j:
        return b""
    while i > 0 and t[i - 1] == UNDERSCORE:
        i -= 1
    while j < len(t) and t[j] == UNDERSCORE:
        j += 1
    return t[i:j]


def edge_underscores(canon: bytes) -> tuple[int, int]:
    """(leading, trailing) underscores of a canonical text value."""
    return len(canon) - len(canon.lstrip(b"_")), len(canon) - len(canon.rstrip(b"_"))


def classify(value: str) -> tuple[str, bytes]:
    """(`number` | `text`, canonical bytes) of a withheld value as written in a values file."""
    raw = value.strip().encode("utf-8")
    if _whole_number().fullmatch(raw):
        canon = number_canon(raw)
        if canon is not None:
            return "number", canon
    if _whole_clock().fullmatch(raw):
        m = clock_re().fullmatch(raw)
        if m is not None:
            canon = clock_canon(m)
            if canon is not None:
                return "number", canon
    return "text", text_value_canon(raw)


def digest(kind: str, canon: bytes, key: bytes | None) -> bytes:
    """Domain-separated SHA-256 (or HMAC-SHA-256 under `key`) of a canonical value."""
    msg = DOMAIN + kind.encode() + b"\0" + canon
    if key is None:
        return hashlib.sha256(msg).digest()
    return hmac.new(key, msg, hashlib.sha256).digest()


def file_digest(data: bytes, key: bytes | None) -> bytes:
    """SHA-256 of a whole file (HMAC-SHA-256 under `key`, so keyed sets stay keyed)."""
    h = file_hasher(key)
    h.update(data)
    return h.digest()


def file_hasher(key: bytes | None):  # noqa: ANN201  (a hashlib or hmac object)
    """An incremental `file_digest`: `update` it with a file's bytes in order, then `digest`."""
    if key is None:
        return hashlib.sha256()
    return hmac.new(key, b"plimsoll-ci/file/v1\0", hashlib.sha256)


def key_id(key: bytes) -> str:
    """A short public id of an HMAC key, so a wrong key is detected without storing the key."""
    return hashlib.sha256(b"plimsoll-ci/key-id/v1\0" + key).hexdigest()[:16]


def text_shape(canon: bytes) -> tuple[int, int]:
    """(length of the first alphanumeric run, canonical length): the extractor's prefilter."""
    n = 0
    while n < len(canon) and _is_word(canon[n]):
        n += 1
    return (n, len(canon))
