"""Load what the tripwire matches: a sealed set, a withheld set, or a canary file's markers."""

from __future__ import annotations

import json

from plimsoll_ci import withheld
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import cannot_read
from plimsoll_ci.tripwire import canary
from plimsoll_ci.tripwire.formats import CANARY_FORMAT
from plimsoll_ci.withheld import WithheldSet


def load_sealed(path: str, key: bytes | None = None) -> WithheldSet:
    """A sealed set from a sealed-set file, a withheld-set file, or a canary file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        raise BadInput(f"--sealed {path}: {cannot_read(e)}; "
                       "make one with `plimsoll-ci sealed build`") from None
    if CANARY_FORMAT.encode() in head:
        try:
            with open(path, "rb") as fh:
                is_canary = json.loads(fh.read()).get("format") == CANARY_FORMAT
        except (OSError, ValueError, AttributeError, UnicodeDecodeError):
            is_canary = False
        if is_canary:
            return canary.marker_set(canary.load(path))
    return withheld.load(path, key=key)
