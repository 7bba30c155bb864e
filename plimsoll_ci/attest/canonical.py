"""Canonical bytes: one JSON encoding and one base64 encoding, and readers that accept only them.

The writer emits JSON with sorted keys, no white space, ASCII only (`\\uXXXX` escapes) and no NaN
or infinity; the reader parses and re-encodes, and refuses bytes that differ. So a byte that changes
the text without changing the parsed value (a capital `E` in a number, a spare space, a duplicated
key, a non-canonical base64 tail) is still caught.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any


class NotCanonical(ValueError):
    """Bytes that are not exactly what the writer would have written."""


_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)


def dumps(obj: Any) -> bytes:
    """The canonical JSON bytes of `obj` (ValueError for NaN, infinity or non-JSON types)."""
    try:
        return _ENCODER.encode(obj).encode("ascii")
    except TypeError as e:
        raise ValueError(f"not JSON-serializable: {e}") from e
    except RecursionError:
        raise ValueError("nested too deeply") from None


def loads(data: bytes) -> Any:
    """Parse canonical JSON; NotCanonical unless `dumps(result) == data`."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise NotCanonical("not ASCII text") from e
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise NotCanonical(f"not valid JSON ({e.args[0].split(':')[0]})") from e
    except RecursionError:
        raise NotCanonical("JSON nested too deeply") from None
    try:
        again = dumps(obj)
    except ValueError as e:
        raise NotCanonical("holds a value canonical JSON cannot carry") from e
    if again != data:
        raise NotCanonical("not in canonical form (sorted keys, no spaces, ASCII escapes)")
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
