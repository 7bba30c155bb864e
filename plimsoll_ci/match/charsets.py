"""UTF-16 and UTF-32 text: told by its byte-order mark or its zero bytes, decoded to UTF-8 a
piece at a time (the scan searches it like any text, beside its bytes as they are)."""

from __future__ import annotations

import codecs

_CODECS = {"utf-16le": "utf-16-le", "utf-16be": "utf-16-be", "utf-32le": "utf-32-le",
           "utf-32be": "utf-32-be"}
_SNIFF = 4096  # bytes looked at for the zero-byte pattern of text without a byte-order mark


def text_encoding(head: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding (`utf-16le`...) of text whose first bytes are `head`: by its
    byte-order mark, or without one by its zero bytes (ASCII-range text in UTF-16 has a zero in
    every other byte, in UTF-32 three in every four); None for anything else."""
    if head[:4] == b"\xff\xfe\x00\x00":
        return "utf-32le"
    if head[:4] == b"\x00\x00\xfe\xff":
        return "utf-32be"
    if head[:2] == b"\xff\xfe":
        return "utf-16le"
    if head[:2] == b"\xfe\xff":
        return "utf-16be"
    if b"\0" not in head[:_SNIFF]:
        return None  # (ASCII-range UTF-16 and UTF-32 have zero bytes; most text has none)
    h = head[: _SNIFF - _SNIFF % 4]
    h = h[: len(h) - len(h) % 4]
    if len(h) < 16:
        return None
    quads = len(h) // 4
    for enc, text_at in (("utf-32le", 0), ("utf-32be", 3)):
        zeros = sum(h[i::4].count(0) for i in range(4) if i != text_at)
        if zeros >= 3 * quads * 0.95 and h[text_at::4].count(0) <= quads * 0.05:
            return enc
    pairs = len(h) // 2
    for enc, text_at in (("utf-16le", 0), ("utf-16be", 1)):
        if h[1 - text_at::2].count(0) >= pairs * 0.9 and h[text_at::2].count(0) <= pairs * 0.1:
            return enc
    return None


class Transcoder:
    """UTF-16 or UTF-32 text, `feed` a piece at a time, out as UTF-8 (a byte-order mark
    dropped; what does not decode becomes U+FFFD)."""

    def __init__(self, encoding: str) -> None:
        self.dec = codecs.getincrementaldecoder(_CODECS[encoding])("replace")
        self.first = True

    def feed(self, chunk: bytes, final: bool = False) -> bytes:
        text = self.dec.decode(chunk, final)
        if self.first and text:
            self.first = False
            if text[0] == "\ufeff":
                text = text[1:]
        return text.encode("utf-8")
