"""Canonical bytes: JSON as RFC 8785 (JCS) writes it, one base64 encoding, and strict readers.

The writer emits RFC 8785 canonical JSON (the JSON Canonicalization Scheme): keys sorted by UTF-16
code units, no white space, strings in UTF-8 with only the mandatory escapes, numbers as ECMAScript
writes them (`30.0` is `30`), no NaN or infinity, integers only within +-(2**53 - 1). Any JCS
library (Python `rfc8785`, npm `canonicalize`, Go, Java) recomputes the same bytes, so every digest
we sign is recomputable outside Python.

Records signed before this (format v1) used a different form: sorted keys, no white space, ASCII
only (`\\uXXXX` escapes), Python's float notation. `dumps_v1` still writes it so old bundles
verify; nothing new is written in it.

The reader parses and re-encodes, and refuses bytes that differ from what the writer of the form
would write. So a byte that changes the text without changing the parsed value (a capital `E` in a
number, a spare space, a duplicated key, a non-canonical base64 tail) is still caught.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from typing import Any


class NotCanonical(ValueError):
    """Bytes that are not exactly what the writer would have written."""


JCS = "jcs"  # RFC 8785: what every new record is written in
V1 = "v1"  # the form of records signed before JCS (read, never written)
MAX_DEPTH = 64  # no record nests deeper; deeper input is refused before any recursion

_ENCODER_V1 = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)


def dumps(obj: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of `obj` (ValueError for what JCS cannot carry: NaN,
    infinity, integers beyond +-(2**53 - 1), lone surrogates, non-JSON types)."""
    fast = _plain(obj)
    if fast is not None:
        try:
            return _ENCODER_JCS.encode(fast).encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate
            raise ValueError(f"not representable in RFC 8785 JSON: {e}") from None
    import rfc8785

    if _depth(obj) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return rfc8785.dumps(obj)
    except (rfc8785.CanonicalizationError, TypeError, UnicodeEncodeError) as e:
        raise ValueError(f"not representable in RFC 8785 JSON: {e}") from None


# What the standard library's C encoder writes exactly as RFC 8785 does: its string escapes
# (`\b \t \n \f \r`, other controls as lowercase `\u00xx`, `"` and `\\`, nothing else), integers
# and, with sorted ASCII keys, the key order (UTF-16 order is code point order there). Floats agree
# where both print positional notation, once an integral float is written as an integer.
_ENCODER_JCS = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
_MAX_INT = 2**53 - 1


def _plain(obj: Any) -> Any:
    """`obj` ready for the fast writer (integral floats as integers), or None when it holds
    anything the fast writer might write differently from RFC 8785 (a non-ASCII or non-string
    key, a float in exponent notation, an integer JCS refuses, a non-JSON type); ValueError when
    it nests deeper than MAX_DEPTH. Walks without recursion."""
    integral, level, depth = False, [obj], 0
    while level:  # one level of nesting at a time; `depth` counts levels holding a container
        below: list = []
        containers = False
        for item in level:
            kind = type(item)
            if kind is str or kind is bool or item is None:
                continue
            if kind is int:
                if -_MAX_INT <= item <= _MAX_INT:
                    continue
                return None
            if kind is float:
                if item == 0 or 1e-4 <= abs(item) < 1e16:  # positional in both (not NaN, inf)
                    integral = integral or item.is_integer()
                    continue
                return None
            if kind is dict:
                if not all(type(k) is str and k.isascii() for k in item):
                    return None
                below.extend(item.values())
            elif kind is list or kind is tuple:
                below.extend(item)
            else:
                return None
            containers = True
        if containers:
            depth += 1
            if depth > MAX_DEPTH:
                raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
        level = below
    return _integral_as_int(obj) if integral else obj


def _integral_as_int(obj: Any) -> Any:
    """A copy with every integral float as an integer (`30.0` -> `30`, `-0.0` -> `0`), as
    ECMAScript writes numbers. Recursion is bounded: `_plain` checked the depth first."""
    if type(obj) is float:
        return int(obj) if obj.is_integer() else obj
    if type(obj) is dict:
        return {k: _integral_as_int(v) for k, v in obj.items()}
    if type(obj) in (list, tuple):
        return [_integral_as_int(v) for v in obj]
    return obj


def dumps_v1(obj: Any) -> bytes:
    """The v1 canonical bytes of `obj` (sorted keys, ASCII escapes, Python float notation)."""
    if _depth(obj) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return _ENCODER_V1.encode(obj).encode("ascii")
    except TypeError as e:
        raise ValueError(f"not JSON-serializable: {e}") from e


def _depth(obj: Any) -> int:
    """Nesting depth of containers, without recursion (so no input can exhaust the stack)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        item, d = stack.pop()
        items: Iterable[Any]
        if isinstance(item, dict):
            items = item.values()
        elif isinstance(item, list | tuple):
            items = item
        else:
            continue
        deepest = max(deepest, d)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((x, d + 1) for x in items)
    return deepest


# A JSON string (to the end of the text when it is never closed), as an unrolled loop.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _text_depth(data: bytes) -> int:
    """Bracket nesting of JSON text outside strings, counted before `json` recurses into it."""
    depth = deepest = 0
    for b in _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS):
        if b in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        else:
            depth -= 1
    return deepest


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise NotCanonical("a key appears twice in one object")
    return out


def _reject_constant(name: str) -> Any:
    raise NotCanonical(f"{name} is not JSON")


def parse(data: bytes) -> tuple[Any, frozenset[str]]:
    """Parse canonical JSON; the object and the forms (`JCS`, `V1`) whose writer gives exactly
    `data` back. NotCanonical when no form does."""
    if _text_depth(data) > MAX_DEPTH:
        raise NotCanonical(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotCanonical("not UTF-8 text") from e
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except NotCanonical:
        raise
    except ValueError as e:
        raise NotCanonical(f"not valid JSON ({e.args[0].split(':')[0]})") from e
    forms = set()
    try:
        if dumps(obj) == data:
            forms.add(JCS)
    except ValueError:
        pass
    # the v1 form is ASCII; its depth is the text's, checked above
    if data.isascii() and _ENCODER_V1.encode(obj).encode("ascii") == data:
        forms.add(V1)
    if not forms:
        raise NotCanonical("not in canonical form (RFC 8785: sorted keys, no spaces, shortest "
                           "numbers)")
    return obj, frozenset(forms)


def loads(data: bytes, form: str = JCS) -> Any:
    """Parse JSON written in `form`; NotCanonical unless that form's writer gives `data` back."""
    obj, forms = parse(data)
    if form not in forms:
        what = "RFC 8785 canonical JSON" if form == JCS else "v1 canonical JSON"
        raise NotCanonical(f"not {what}")
    return obj


def b64encode(data: bytes) -> str:
    """Standard base64 with padding, as DSSE writers emit it."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: Any) -> bytes:
    """Decode standard padded base64; NotCanonical unless re-encoding gives `text` back."""
    if not isinstance(text, str):
        raise NotCanonical("base64 field is not a string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as e:
        raise NotCanonical("not valid base64") from e
    if b64encode(raw) != text:
        raise NotCanonical("base64 not in canonical form")
    return raw
