"""Digests that signed records carry and both sides recompute: SHA-256 in hex, the practice set's
digest, and the commitment to a seed set (a fresh set drawn for one run, or a sealed held-out set).

A neutral module below `attest/` (which checks these digests in a record) and `grading/` (which
makes them): it imports nothing of the project but `errors`.

A commitment is a domain-separated SHA-256 over a canonical binary encoding of the sorted seeds
and a 32-byte random salt. The salt keeps a ~33-bit seed from being brute-forced out of the
commitment while the run is going on; the reveal (seeds and salt) lets anyone check afterwards that
the seeds flown were the seeds committed to.

Encoding (version 1), all integers big-endian:

    b"plimsoll-ci fresh-set v1\\x00" || salt (32 bytes) || count (u32) || seed_1 .. seed_n (u64 each)

with the seeds sorted ascending and distinct. `reveal()` gives `{"salt": hex, "seeds": [...]}` with
the same order and each seed as a decimal string (`"18446744073709551557"`: RFC 8785 JSON, which
signed records are written in, carries no integer above 2**53 - 1), so a reveal has exactly one
valid form. Records signed before 64-bit seeds (`grading-run/v1`, `/v2`) hold reveals with integer
seeds: `from_reveal(doc, integers=True)` reads those. Drawing a set is `grading.fresh.draw`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput

DOMAIN = b"plimsoll-ci fresh-set v1\x00"
SALT_BYTES = 32
SEED_MAX = 2**64 - 1
_SALT_HEX = re.compile(f"[0-9a-f]{{{2 * SALT_BYTES}}}")
_DECIMAL = re.compile("0|[1-9][0-9]{0,19}")
_SHA256_HEX = re.compile("[0-9a-f]{64}")


def is_sha256_hex(value: Any) -> bool:
    """True for exactly 64 lowercase hex digits."""
    return isinstance(value, str) and _SHA256_HEX.fullmatch(value) is not None


def practice_set_digest(seeds: Iterable[int]) -> str:
    """SHA-256 (hex) naming a practice set: b"plimsoll-ci practice-set v1\\x00" || count (u32 BE)
    || each distinct seed (u64 BE), sorted. No salt: practice seeds are known to the loop anyway."""
    ordered = sorted(set(seeds))
    if any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < 2**64 for x in ordered):
        raise BadInput("practice set: seeds must be integers in 0..2**64-1")
    packed = struct.pack(f">I{len(ordered)}Q", len(ordered), *ordered)
    return hashlib.sha256(b"plimsoll-ci practice-set v1\x00" + packed).hexdigest()


class FreshSet(NamedTuple):
    """Seeds for one run (sorted, distinct) and the salt of their commitment."""

    seeds: tuple[int, ...]
    salt: bytes


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


def seed_text(seed: int) -> str:
    """A seed as JSON carries it: its decimal digits (no sign, no leading zero)."""
    return str(seed)


def parse_seed_text(text: Any) -> int:
    """The seed a decimal string names; ValueError unless `text` is exactly what `seed_text`
    writes for a seed in 0..2**64-1 (so one seed has one form)."""
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text) or int(text) > SEED_MAX:
        raise ValueError("a seed is written as a decimal string of 0..2**64-1, no leading zeros")
    return int(text)


def reveal(fresh: FreshSet) -> dict[str, Any]:
    """The reveal to publish after grading ends: `{"salt": hex, "seeds": ["decimal", ...]}`."""
    return {"salt": fresh.salt.hex(), "seeds": [seed_text(s) for s in fresh.seeds]}


def from_reveal(doc: Any, integers: bool = False) -> FreshSet:
    """Parse a reveal strictly (the one form `reveal()` writes; with `integers`, the form of
    records signed before 64-bit seeds: JSON integers); ValueError says what is wrong."""
    if not isinstance(doc, dict) or set(doc) != {"salt", "seeds"}:
        raise ValueError('a reveal is an object with exactly "salt" and "seeds"')
    salt, listed = doc["salt"], doc["seeds"]
    if not isinstance(salt, str) or not _SALT_HEX.fullmatch(salt):
        raise ValueError(f"reveal salt must be {2 * SALT_BYTES} lowercase hex digits")
    if not isinstance(listed, list) or not listed:
        raise ValueError("reveal seeds must be a non-empty list")
    seeds = []
    for seed in listed:
        if not integers:
            seeds.append(parse_seed_text(seed))
        elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
            raise ValueError("reveal seeds must be integers in 0..2**64-1")
        else:
            seeds.append(seed)
    if any(a >= b for a, b in zip(seeds, seeds[1:], strict=False)):
        raise ValueError("reveal seeds must be sorted ascending and distinct")
    return FreshSet(tuple(seeds), bytes.fromhex(salt))


def check_reveal(commitment: str, reveal: Any, integers: bool = False) -> bool:
    """True when `reveal` is well formed (see `from_reveal`) and its seeds and salt hash to
    `commitment`."""
    try:
        fresh = from_reveal(reveal, integers)
    except ValueError:
        return False
    if not isinstance(commitment, str):
        return False
    return hmac.compare_digest(commit(fresh), commitment)
