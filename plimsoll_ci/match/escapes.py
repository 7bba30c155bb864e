"""Escapes and entities on one line of text, undone: `\\u`/`\\x` escapes, then percent-encoding,
then HTML entities, each pass over the one before (`unescape`, the quick way), and the same with
the tokens each pass replaced (`unescape_mapped`), so that a value found in the result is traced
back to its own text in the line (`trace`), not to the line's first escape. Pure: bytes in, bytes
out.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from plimsoll_ci.match.ascii import lazy_re

_pct = lazy_re(rb"%[0-9A-Fa-f]{2}")
_uesc = lazy_re(rb"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})")
_ent = lazy_re(rb"&#?[A-Za-z0-9]{1,10};")


# HTML character references as `html.unescape` finds them (its own pattern, over bytes)
_charref = lazy_re(rb"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")

Tokens = tuple[tuple[int, int, int, int], ...]  # (offset out, offset in, length out, length in)


def _replaced(pattern: re.Pattern[bytes], repl: Callable[[re.Match[bytes]], bytes],
              data: bytes) -> tuple[bytes, Tokens]:
    """`pattern.sub(repl, data)`, and where each replacement went (`Tokens`)."""
    pieces: list[bytes] = []
    tokens: list[tuple[int, int, int, int]] = []
    pos = out = 0
    for m in pattern.finditer(data):
        a, b = m.span()
        r = repl(m)
        out += a - pos
        pieces += (data[pos:a], r)
        tokens.append((out, a, len(r), b - a))
        out += len(r)
        pos = b
    if not tokens:
        return data, ()
    pieces.append(data[pos:])
    return b"".join(pieces), tuple(tokens)


def _code_point(m: re.Match[bytes]) -> bytes:
    return chr(int(m.group(1) or m.group(2), 16)).encode("utf-8", "surrogatepass")


def _entity(m: re.Match[bytes]) -> bytes:
    import html  # (its entity table: 2-4 ms of a hook run that meets no entity)

    return html.unescape(m.group(0).decode("utf-8", "surrogateescape")).encode(
        "utf-8", "surrogateescape")


def unescape_mapped(region: bytes) -> tuple[bytes, tuple[Tokens, ...]]:
    """A line with its `\\u`/`\\x` escapes, then percent-encoding, then HTML entities undone
    (each pass over the one before, as a browser or a URL parser would), and the tokens each
    pass replaced, so an offset of the result can be traced back (`escaped_at`)."""
    out, first = _replaced(_uesc(), _code_point, region)
    passes = [first]
    if _pct().search(out):
        out, more = _replaced(_pct(), lambda m: bytes((int(m.group(0)[1:], 16),)), out)
        passes.append(more)
    if _ent().search(out):
        out, more = _replaced(_charref(), _entity, out)
        passes.append(more)
    return out, tuple(passes)


def unescape(region: bytes) -> bytes:
    """A line with its escapes, then percent-encoding, then HTML entities undone (the quick
    way: the tokens are traced only for a line a value is found in, `unescape_mapped`)."""
    def one(m: re.Match[bytes]) -> bytes:
        cp = int(m.group(1) or m.group(2), 16)
        return chr(cp).encode("utf-8", "surrogatepass")

    out = _uesc().sub(one, region)
    if _pct().search(out):
        from urllib.parse import unquote_to_bytes

        out = unquote_to_bytes(out)
    if _ent().search(out):
        import html  # (its entity table: 2-4 ms of a hook run that meets no entity)

        out = html.unescape(out.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    return out


def _back(tokens: Tokens, offset: int) -> int:
    """The offset in a pass's input of `offset` in its output: exact in text it left alone, the
    token's start inside a replaced token."""
    k = bisect.bisect_right(tokens, (offset, 1 << 62)) - 1
    if k < 0:
        return offset
    out, at, n_out, n_in = tokens[k]
    return at if offset < out + n_out else at + n_in + offset - out - n_out


def trace(passes: tuple[Tokens, ...], start: int, end: int) -> tuple[int, int]:
    """Where in the line the text that decoded to `start:end` of its result is (`passes` from
    `unescape_mapped`): its start, and the end of the text (or the whole token) its last byte
    came from."""
    a, b = start, end
    for tokens in reversed(passes):
        a, b = _back(tokens, a), _back_end(tokens, b)
    return a, b


def _back_end(tokens: Tokens, end: int) -> int:
    """`_back` of an exclusive end: past the token whose output holds byte `end - 1`."""
    k = bisect.bisect_right(tokens, (end - 1, 1 << 62)) - 1
    if k < 0:
        return end
    out, at, n_out, n_in = tokens[k]
    return at + n_in if end - 1 < out + n_out else at + n_in + end - out - n_out


def escape_kind(tok: bytes) -> str:
    kinds = []
    if _pct().search(tok):
        kinds.append("percent-encoding")
    if b"\\u" in tok or b"\\x" in tok:
        kinds.append("escapes")
    if _ent().search(tok):
        kinds.append("html-entities")
    return "+".join(kinds) or "escapes"
