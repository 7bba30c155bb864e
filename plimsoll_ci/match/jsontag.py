"""The string value of a top-level key of a JSON object, read a piece at a time without recursion.

A shipped withheld (or sealed) set is found by its top-level `format` tag. Parsing the whole
document would recurse once per level of nesting (a file of `[` nested 100,000 deep crashes a
recursive parser) and hold all of it in memory; this reader keeps a depth counter and the one
top-level string it is in, so no nesting depth or size can break it. It checks no more of the
grammar than it needs: a document that starts as an object and carries the tag as a top-level
key's value is a set, even if it is cut short or damaged after that.
"""

from __future__ import annotations

import json

from plimsoll_ci.match.ascii import lazy_re

_outside = lazy_re(rb'["{}\[\],:]')  # what matters outside strings at the top level
_nested = lazy_re(rb'["{}\[\]]')  # what matters inside a nested value
_inside = lazy_re(rb'["\\]')  # what matters inside a string


MAX_STRING = 256  # a top-level key or value longer than this is no tag
_WHITE = b" \t\r\n\xef\xbb\xbf"  # (and a UTF-8 byte-order mark)


class TopLevelKey:
    """`feed` a JSON text in pieces; `values` are the strings that `key` has at its top level."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.values: list[str] = []
        self.done = False  # the top-level object has ended (or the text is no object)
        self._depth = 0
        self._in_string = False
        self._escape = False  # the last piece ended inside a string, after a backslash
        self._expect = "key"  # what a top-level string is: "key", "value" or "other"
        self._text = bytearray()  # the top-level string being read
        self._last_key: str | None = None

    def feed(self, piece: bytes) -> None:
        """Read the next piece of the text."""
        pos, n = 0, len(piece)
        if self._depth == 0 and not self.done:
            while pos < n and piece[pos] in _WHITE:
                pos += 1
            if pos == n:
                return
            if piece[pos : pos + 1] != b"{":
                self.done = True  # not an object: no top-level keys
                return
            self._depth, pos = 1, pos + 1
        while pos < n and not self.done:
            if self._in_string:
                pos = self._string(piece, pos)
                continue
            m = (_outside() if self._depth == 1 else _nested()).search(piece, pos)
            if m is None:
                return
            c = piece[m.start() : m.end()]
            pos = m.end()
            if c == b'"':
                self._in_string = True
                self._text.clear()
            elif c in b"{[":
                if self._depth == 1:
                    self._expect = "other"  # a container value, not a string
                self._depth += 1
            elif c in b"}]":
                self._depth -= 1
                self.done = self._depth == 0
            elif c == b":":
                self._expect = "value"
            else:  # ","
                self._expect = "key"

    def _string(self, piece: bytes, pos: int) -> int:
        """Read on inside a string from `pos`; the position after what was read."""
        top = self._depth == 1
        if self._escape:
            self._escape = False
            if top:
                self._keep(piece[pos : pos + 1])
            return pos + 1
        m = _inside().search(piece, pos)
        end = len(piece) if m is None else m.start()
        if top:
            self._keep(piece[pos:end])
        if m is None:
            return end
        if piece[end : end + 1] == b"\\":
            if top:
                self._keep(b"\\")
            if end + 1 < len(piece):
                if top:
                    self._keep(piece[end + 1 : end + 2])
                return end + 2
            self._escape = True
            return end + 1
        self._in_string = False
        if top:
            self._close()
        return end + 1

    def _keep(self, data: bytes) -> None:
        if len(self._text) <= MAX_STRING:
            self._text += data[: MAX_STRING + 1 - len(self._text)]

    def _close(self) -> None:
        text = None
        if len(self._text) <= MAX_STRING:
            try:
                text = json.loads(b'"' + bytes(self._text) + b'"')
            except ValueError:
                text = None
        if self._expect == "key":
            self._last_key = text
        elif self._expect == "value" and self._last_key == self.key and text is not None:
            self.values.append(text)
        self._expect = "other"


def top_level_strings(pieces: list[bytes] | tuple[bytes, ...], key: str) -> list[str]:
    """The string values `key` has at the top level of the JSON text `pieces` make up."""
    reader = TopLevelKey(key)
    for piece in pieces:
        reader.feed(piece)
        if reader.done:
            break
    return reader.values
