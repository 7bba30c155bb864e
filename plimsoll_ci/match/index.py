"""The digest index: withheld value digests plus the shape prefilter derived from them.

Only candidates whose shape could belong to some entry are canonicalized and hashed; the shape
(digit count, significant digits, first-word and total length) is stored beside each digest.
"""

from __future__ import annotations

from typing import NamedTuple

from plimsoll_ci.match.canonical import digest, file_digest


class ValueEntry(NamedTuple):
    id: str
    kind: str  # "number" | "text"
    digest: bytes
    shape: dict


class ValueIndex:
    """Lookup of value digests, with the prefilter profile the extractor uses."""

    def __init__(self, entries: list[ValueEntry], key: bytes | None) -> None:
        self.key = key
        self.numbers: dict[bytes, list[str]] = {}
        self.texts: dict[bytes, list[str]] = {}
        self.files: dict[bytes, list[str]] = {}
        self.int_lengths: set[int] = set()
        self.min_sig = 10**9
        self.clockable = False
        self.text_shapes: dict[int, set[int]] = {}
        for e in entries:
            if e.kind == "number":
                self.numbers.setdefault(e.digest, []).append(e.id)
                if e.shape.get("int"):
                    self.int_lengths.add(int(e.shape["digits"]))
                self.min_sig = min(self.min_sig, max(1, int(e.shape.get("sig", 1))))
                self.clockable = self.clockable or bool(e.shape.get("clock"))
            elif e.kind == "text":
                self.texts.setdefault(e.digest, []).append(e.id)
                first, total = int(e.shape["first"]), int(e.shape["len"])
                self.text_shapes.setdefault(first, set()).add(total)
        self.has_numbers = bool(self.numbers)
        self.has_ints = bool(self.int_lengths)
        self.max_text = max((max(v) for v in self.text_shapes.values()), default=0)

    def add_file(self, entry_id: str, file_sha: bytes) -> None:
        """Register a whole-file entry (its stored digest)."""
        self.files.setdefault(file_sha, []).append(entry_id)

    def number_ids(self, canon: bytes) -> list[str]:
        return self.numbers.get(digest("number", canon, self.key), [])

    def text_ids(self, canon: bytes) -> list[str]:
        return self.texts.get(digest("text", canon, self.key), [])

    def file_ids(self, data: bytes) -> list[str]:
        if not self.files:
            return []
        return self.files.get(file_digest(data, self.key), [])


def number_shape(canon: bytes) -> dict:
    """Prefilter shape of a canonical number: digit count, integer-ness, significant digits."""
    s = canon.decode()
    is_int = "." not in s
    digits = s.replace(".", "")
    sig = len(digits.strip("0")) or 1
    try:
        clock = float(s) < 360000
    except ValueError:
        clock = False
    return {"int": is_int, "digits": len(s) if is_int else len(digits), "sig": sig, "clock": clock}


def text_shape_dict(canon: bytes) -> dict:
    """Prefilter shape of a canonical text value: first word length and total length."""
    from plimsoll_ci.match.canonical import text_shape

    first, total = text_shape(canon)
    return {"first": first, "len": total}
