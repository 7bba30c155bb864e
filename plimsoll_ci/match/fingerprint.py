"""Source fingerprints: winnowed k-grams over normalized tokens (Schleimer, Wilkerson, Aiken 2003).

Identifiers become one placeholder (so renaming does not hide a copy), comments and layout are
dropped (so reformatting does not either); keywords, numbers and operators stay.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import keyword
import re

K = 8  # tokens per k-gram
W = 6  # winnowing window
DOMAIN = b"plimsoll-ci/source/v1\0"

@functools.cache
def _token() -> re.Pattern[bytes]:  # (compiled on first use)
    return re.compile(
        rb"#[^\n]*|//[^\n]*|/\*.*?\*/"  # comments (dropped)
        rb"|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"  # strings
        rb"|[A-Za-z_][A-Za-z0-9_]*"  # identifiers and keywords
        rb"|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?"  # numbers
        rb"|[^\sA-Za-z0-9_]",  # operators and punctuation
        re.S,
    )


_KEYWORDS = frozenset(k.encode() for k in keyword.kwlist) | {
    b"function", b"const", b"let", b"var", b"return", b"self", b"this", b"np", b"numpy", b"math",
}


def tokens(source: bytes) -> list[bytes]:
    """Normalized tokens of a source file."""
    out = []
    for m in _token().finditer(source):
        t = m.group()
        c = t[0]
        if c == 35 or t[:2] in (b"//", b"/*"):
            continue
        if c in (34, 39):
            out.append(b"S")
        elif (65 <= c <= 90) or (97 <= c <= 122) or c == 95:
            out.append(t if t in _KEYWORDS else b"V")
        else:
            out.append(t)
    return out


def _h(gram: bytes, key: bytes | None) -> int:
    if key is None:
        d = hashlib.sha256(DOMAIN + gram).digest()
    else:
        d = hmac.new(key, DOMAIN + gram, hashlib.sha256).digest()
    return int.from_bytes(d[:8], "big")


def fingerprints(source: bytes, key: bytes | None = None) -> set[int]:
    """Winnowed k-gram hashes of a source file (a set of 64-bit integers)."""
    toks = tokens(source)
    if len(toks) < K:
        return {_h(b" ".join(toks), key)} if toks else set()
    hashes = [_h(b" ".join(toks[i : i + K]), key) for i in range(len(toks) - K + 1)]
    if len(hashes) <= W:
        return {min(hashes)}
    picked = set()
    for i in range(len(hashes) - W + 1):
        picked.add(min(hashes[i : i + W]))
    return picked


def overlap(entry: set[int], shipped: set[int]) -> float:
    """Share of an entry's fingerprints that a shipped file carries (0..1)."""
    if not entry:
        return 0.0
    return len(entry & shipped) / len(entry)
