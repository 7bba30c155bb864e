"""Pinned keys: a verification trusts only the keys it was given, never one found beside the
records it checks.

    trusted = pin(["job.pub"])                      # `--pub FILE`, each read bounded
    key, report = verify_pinned(data, trusted)     # (None, None): signed by a key not pinned

A bundle names the key that signed it (`claimed_keyid`, unverified); that name only picks which
pinned key to verify under, and names a key that is not pinned in a refusal. Every report says
which keys it trusted and where each came from (`Pinned.line`), and a key file lying in the
folder it checks proves consistency only (`beside`, `consistency_note`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.attest.bundle import Report, verify_bytes
from plimsoll_ci.attest.keys import PublicKey, load_public_key
from plimsoll_ci.digests import is_sha256_hex


class Pinned(NamedTuple):
    """A key a verification was told to trust, and where it came from (`--pub FILE`)."""

    public: PublicKey
    source: str

    def line(self) -> str:
        """`key sha256:KEYID (from SOURCE)`: what a report says it trusted."""
        return f"key sha256:{self.public.keyid} (from {self.source})"


def pin(paths: list[str | os.PathLike[str]], flag: str = "--pub") -> list[Pinned]:
    """The keys given as `flag FILE` (each read bounded), once each, in the order given."""
    found: dict[str, Pinned] = {}
    for path in paths:
        public = load_public_key(path)
        found.setdefault(public.keyid, Pinned(public, f"{flag} {path}"))
    return list(found.values())


def beside(key_path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """True when the key file lies in `folder` (or under it): a key found beside the records it
    verifies proves only that they are consistent with it, not who signed them."""
    key, top = Path(key_path).resolve(), Path(folder).resolve()
    return key.is_relative_to(top)


def consistency_note(key_path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> str:
    """What verifying against a key kept beside the records proves (and what it does not)."""
    return (f"consistency only: the key {key_path} lies in {folder}, beside the records it "
            "verifies, so anyone who changed the records could have replaced it; this proves "
            "the records are consistent with it, not who signed them. Pin the key you expect: "
            "give --pub a copy taken from where the signer ran (a CI secret's public half, the "
            "repository, a job output)")


def claimed_keyid(data: bytes) -> str | None:
    """The key id line 1's envelope names: unverified, used only to pick which pinned key to
    verify under and to name a key that is not pinned."""
    first = data.split(b"\n", 1)[0]
    try:
        sig = json.loads(first)["envelope"]["signatures"][0]["keyid"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    # shown in messages: only a key id's own shape (64 hex digits) is ever printed
    return sig if is_sha256_hex(sig) else None


def verify_pinned(data: bytes, pinned: Sequence[Pinned],
                  expect_count: int | None = None) -> tuple[Pinned | None, Report | None]:
    """Verify `data` under the pinned key it names: (that key, its report), or (None, None)
    when it names none of them (`claimed_keyid` says which it names). A key found beside a
    bundle is never among `pinned` unless the caller was given it."""
    keyid = claimed_keyid(data)
    for one in pinned:
        if one.public.keyid == keyid:
            return one, verify_bytes(data, one.public, expect_count)
    return None, None
