"""The fresh set: seeds drawn for one run, committed by digest before any flight, revealed after.

A commitment is a domain-separated SHA-256 over a canonical binary encoding of the sorted seeds
and a 32-byte random salt. The salt keeps a ~33-bit seed from being brute-forced out of the
commitment while the run is going on; the reveal (seeds and salt) lets anyone check afterwards that
the seeds flown were the seeds committed to.

Encoding (version 1), all integers big-endian:

    b"plimsoll-ci fresh-set v1\\x00" || salt (32 bytes) || count (u32) || seed_1 .. seed_n (u64 each)

with the seeds sorted ascending and distinct. `reveal()` gives `{"salt": hex, "seeds": [...]}` with
the same order, so a reveal has exactly one valid form.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

DOMAIN = b"plimsoll-ci fresh-set v1\x00"
SALT_BYTES = 32
SEED_MAX = 2**64 - 1
# Ten-digit seeds: far from the small numbers anyone tries first (101..104) and from a hunt that
# counts up from zero, and long enough for the ship scan to tell them apart from ordinary numbers.
DEFAULT_LOW = 1_000_000_000
DEFAULT_HIGH = 2**32
_SALT_HEX = re.compile(f"[0-9a-f]{{{2 * SALT_BYTES}}}")


class FreshSet(NamedTuple):
    """Seeds for one run (sorted, distinct) and the salt of their commitment."""

    seeds: tuple[int, ...]
    salt: bytes


def draw(count: int, low: int = DEFAULT_LOW, high: int = DEFAULT_HIGH) -> FreshSet:
    """Draw `count` distinct seeds uniformly from [low, high) and a fresh salt, with `secrets`."""
    if count < 1:
        raise ValueError(f"a fresh set needs at least one seed, not {count}")
    if not 0 <= low < high <= SEED_MAX + 1:
        raise ValueError(f"seed range [{low}, {high}) is empty or outside 0..2**64-1")
    if high - low < count:
        raise ValueError(f"seed range [{low}, {high}) holds fewer than {count} seeds")
    seeds: set[int] = set()
    while len(seeds) < count:
        seeds.add(low + secrets.randbelow(high - low))
    return FreshSet(tuple(sorted(seeds)), secrets.token_bytes(SALT_BYTES))


def make(seeds: Iterable[int], salt: bytes | None = None) -> FreshSet:
    """A fresh set from given seeds (sorted here); a new random salt unless one is given."""
    ordered = tuple(sorted(set(seeds)))
    if not ordered:
        raise ValueError("a fresh set needs at least one seed")
    for seed in ordered:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
            raise ValueError("fresh set seeds must be integers in 0..2**64-1")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    if len(salt) != SALT_BYTES:
        raise ValueError(f"a fresh set salt is {SALT_BYTES} bytes, not {len(salt)}")
    return FreshSet(ordered, bytes(salt))


def _encode(seeds: tuple[int, ...], salt: bytes) -> bytes:
    return DOMAIN + salt + struct.pack(f">I{len(seeds)}Q", len(seeds), *seeds)


def commit(fresh: FreshSet) -> str:
    """The commitment to publish before any flight: 64 lowercase hex digits."""
    return hashlib.sha256(_encode(fresh.seeds, fresh.salt)).hexdigest()


def reveal(fresh: FreshSet) -> dict[str, Any]:
    """The reveal to publish after grading ends: `{"salt": hex, "seeds": [sorted ints]}`."""
    return {"salt": fresh.salt.hex(), "seeds": list(fresh.seeds)}


def from_reveal(doc: Any) -> FreshSet:
    """Parse a reveal strictly (the one form `reveal()` writes); ValueError says what is wrong."""
    if not isinstance(doc, dict) or set(doc) != {"salt", "seeds"}:
        raise ValueError('a reveal is an object with exactly "salt" and "seeds"')
    salt, seeds = doc["salt"], doc["seeds"]
    if not isinstance(salt, str) or not _SALT_HEX.fullmatch(salt):
        raise ValueError(f"reveal salt must be {2 * SALT_BYTES} lowercase hex digits")
    if not isinstance(seeds, list) or not seeds:
        raise ValueError("reveal seeds must be a non-empty list")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
            raise ValueError("reveal seeds must be integers in 0..2**64-1")
    if any(a >= b for a, b in zip(seeds, seeds[1:], strict=False)):
        raise ValueError("reveal seeds must be sorted ascending and distinct")
    return FreshSet(tuple(seeds), bytes.fromhex(salt))


def check_reveal(commitment: str, reveal: Any) -> bool:
    """True when `reveal` is well formed and its seeds and salt hash to `commitment`."""
    try:
        fresh = from_reveal(reveal)
    except ValueError:
        return False
    if not isinstance(commitment, str):
        return False
    return hmac.compare_digest(commit(fresh), commitment)
