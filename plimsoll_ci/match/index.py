"""The digest index: withheld value digests plus the shape prefilter derived from them.

Only candidates whose shape could belong to some entry are canonicalized and hashed; the shape
(digit count, significant digits, first-word and total length) is stored beside each digest.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import NamedTuple

from plimsoll_ci.match.canonical import (
    digest,
    edge_underscores,
    file_digest,
    file_hasher,
    text_shape,
)

TAG_BITS = 12
SEEN_CANDIDATES = 1 << 14  # candidates whose entries are kept, per kind (then all forgotten)
_MULT = 0x9E3779B97F4A7C15  # Fibonacci hashing constant; keyed sets derive theirs from the key


def tag_multiplier(key: bytes | None) -> int:
    """The odd 64-bit multiplier of the first-word tag (secret for keyed sets)."""
    if key is None:
        return _MULT
    d = hmac.new(key, b"plimsoll-ci/tag/v1", hashlib.sha256).digest()
    return int.from_bytes(d[:8], "little") | 1


def word_key(word: bytes) -> int:
    """Up to four leading bytes of a (lowercased) word and its length, as one integer."""
    head = word[:4]
    return int.from_bytes(head, "little") | (min(len(word), 255) << 32)


def word_tag(word: bytes, mult: int) -> int:
    """A TAG_BITS-bit tag of a word: the prefilter that keeps common words from being hashed.

    It tells at most TAG_BITS bits about a value's first word, and under a keyed set nothing
    without the key.
    """
    return ((word_key(word) * mult) & 0xFFFFFFFFFFFFFFFF) >> (64 - TAG_BITS)


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
        self._seen_numbers: dict[bytes, list[str]] = {}  # canonical candidate -> its entries
        self._seen_texts: dict[bytes, list[str]] = {}
        self.int_lengths: set[int] = set()
        self.min_sig = 10**9
        self.clockable = False
        self.text_shapes: dict[int, set[int]] = {}  # first run length -> totals (loose)
        self.text_runs: dict[tuple[int, ...], set[int]] = {}  # word run lengths -> totals
        # (word run lengths, total) -> (leading, trailing) underscores of the entries of that shape
        edges: dict[tuple[tuple[int, ...], int], set[tuple[int, int]]] = {}
        self.mult = tag_multiplier(key)
        self.tags: set[int] = set()
        self.untagged = False  # an entry without a tag: the tag prefilter is off
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
                runs = e.shape.get("runs")
                if isinstance(runs, list) and runs and all(isinstance(r, int) for r in runs):
                    lead, trail = int(e.shape.get("lead", 0)), int(e.shape.get("trail", 0))
                    core = total - lead - trail  # the underscores at its ends are looked at apart
                    self.text_runs.setdefault(tuple(runs), set()).add(core)
                    edges.setdefault((tuple(runs), core), set()).add((lead, trail))
                    tag = e.shape.get("tag")
                    if isinstance(tag, int):
                        self.tags.add(tag)
                    else:
                        self.untagged = True
                else:  # a set without run lengths: the looser first-word prefilter
                    self.text_shapes.setdefault(first, set()).add(total)
        self.has_numbers = bool(self.numbers)
        self.has_ints = bool(self.int_lengths)
        self.min_int_length = min(self.int_lengths, default=0)
        self.has_decimals = any(e.kind == "number" and not e.shape.get("int") for e in entries)
        self.has_texts = bool(self.texts)
        # first three run lengths -> [(all run lengths, totals, underscores)]: one dict lookup per
        # candidate; underscores (total -> {(leading, trailing)}) is None when no entry has any
        self.runs_by_key: dict[tuple[int, ...], list[tuple[tuple[int, ...], set[int],
                                                           dict[int, set[tuple[int, int]]] | None]]] = {}
        self.first_runs: set[int] = set()
        self.key_lengths: set[int] = set()
        for runs, totals in self.text_runs.items():
            under = {t: edges[(runs, t)] for t in totals}
            plain = all(w == {(0, 0)} for w in under.values())
            self.runs_by_key.setdefault(runs[:3], []).append((runs, totals,
                                                              None if plain else under))
            self.first_runs.add(runs[0])
            self.key_lengths.add(min(3, len(runs)))
        self.max_runs = max((len(r) for r in self.text_runs), default=0)
        self.max_lead = max((lead for w in edges.values() for lead, _ in w), default=0)
        self.sigs: set[int] = set()
        for e in entries:
            if e.kind == "number":
                self.sigs.add(max(1, int(e.shape.get("sig", 1))))
        # Whether every number entry gives its significant digits: then a canonical number with
        # others is no entry's, and its digest is never taken (`number_ids`). Lock files and
        # logs bring thousands of number tokens a megabyte (`x86_64`, `0b0f...` in hashes).
        self.sigs_known = all("sig" in e.shape for e in entries if e.kind == "number")

    def add_file(self, entry_id: str, file_sha: bytes) -> None:
        """Register a whole-file entry (its stored digest)."""
        self.files.setdefault(file_sha, []).append(entry_id)

    def number_ids(self, canon: bytes) -> list[str]:
        """The number entries whose canonical form is `canon`."""
        if self.sigs_known and (len(canon.replace(b".", b"").strip(b"0")) or 1) not in self.sigs:
            return []  # (the significant digits of `number_shape`)
        return self._ids(self.numbers, self._seen_numbers, "number", canon)

    def text_ids(self, canon: bytes) -> list[str]:
        """The text entries whose canonical form is `canon`."""
        return self._ids(self.texts, self._seen_texts, "text", canon)

    def _ids(self, table: dict[bytes, list[str]], seen: dict[bytes, list[str]], kind: str,
             canon: bytes) -> list[str]:
        # A history's blobs are versions of the same files: the same candidates (an entry's own
        # spelling among them) come back thousands of times, and each digest is kept for them.
        ids = seen.get(canon)
        if ids is None:
            if len(seen) >= SEEN_CANDIDATES:
                seen.clear()
            ids = seen[canon] = table.get(digest(kind, canon, self.key), [])
        return ids

    def file_ids(self, data: bytes) -> list[str]:
        if not self.files:
            return []
        return self.files.get(file_digest(data, self.key), [])

    def file_hasher(self):  # noqa: ANN201
        """An incremental file digest under this index's key (`file_ids_of` its `digest()`)."""
        return file_hasher(self.key)

    def file_ids_of(self, file_sha: bytes) -> list[str]:
        """The file entries whose digest is `file_sha`."""
        return self.files.get(file_sha, [])


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


def text_shape_dict(canon: bytes, key: bytes | None = None) -> dict:
    """Prefilter shape of a canonical text value: word run lengths and total length.

    Lengths only: they say no more about a value than its length does. `lead` and `trail` count
    the underscores at its ends (`__init__`: 2 and 2), which are matched apart from its words.
    """
    lead, trail = edge_underscores(canon)
    first, _ = text_shape(canon[lead:])
    words = re.findall(rb"[0-9a-z\x80-\xff]+", canon)
    shape = {"first": first, "len": len(canon), "runs": [len(w) for w in words],
             "tag": word_tag(words[0], tag_multiplier(key)) if words else 0}
    if lead or trail:  # (only then: a set without them is byte for byte what it was)
        shape["lead"], shape["trail"] = lead, trail
    return shape
