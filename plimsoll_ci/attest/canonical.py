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
    import rfc8785

    if _depth(obj) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return rfc8785.dumps(obj)
    except (rfc8785.CanonicalizationError, TypeError, UnicodeEncodeError) as e:
        raise ValueError(f"not representable in RFC 8785 JSON: {e}") from None


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


def _text_depth(data: bytes) -> int:
    """Bracket nesting of JSON text outside strings, counted before `json` recurses into it."""
    depth = deepest = 0
    in_string = escaped = False
    for b in data:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:  # closing quote
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        elif b in (0x5D, 0x7D):
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
    for form, writer in ((JCS, dumps), (V1, dumps_v1)):
        try:
            if writer(obj) == data:
                forms.add(form)
        except ValueError:
            pass
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
