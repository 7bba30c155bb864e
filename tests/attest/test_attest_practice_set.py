"""The practice-set digest: one definition, the formula docs/verify.md gives, its example true."""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

import pytest

import plimsoll_sim as sim
from plimsoll_ci.attest import record

REPO = Path(__file__).resolve().parents[2]
VERIFY_MD = (REPO / "docs" / "verify.md").read_text()


def docs_formula(seeds: list[int]) -> str:
    """The formula as docs/verify.md writes it, computed here with nothing of the package."""
    distinct = sorted(set(seeds))
    return hashlib.sha256(b"plimsoll-ci practice-set v1\x00" + struct.pack(">I", len(distinct))
                          + b"".join(struct.pack(">Q", s) for s in distinct)).hexdigest()


def test_the_docs_give_the_formula_this_test_computes():
    assert ('`b"plimsoll-ci practice-set v1\\x00" || count (u32 BE) || each seed (u64 BE), '
            "sorted, distinct`") in VERIFY_MD.replace("\n  ", " ")


@pytest.mark.parametrize("seeds", [list(sim.PRACTICE_SEEDS), [33, 11, 22, 11], [0],
                                   [2**64 - 1, 1], []])
def test_the_practice_set_digest_is_the_documented_formula(seeds):
    assert record.practice_set_digest(seeds) == docs_formula(seeds)


def test_the_docs_example_names_the_simulators_practice_set():
    shown = re.search(r"practice sets: 1 \(([0-9a-f]{16})\.\.\.\)", VERIFY_MD)
    assert shown is not None
    assert record.practice_set_digest(sim.PRACTICE_SEEDS).startswith(shown.group(1))


def test_one_definition_of_the_practice_set_digest():
    """No other module hashes a practice set its own way (seeds joined by newlines was one)."""
    holders = [p.relative_to(REPO).as_posix() for p in (REPO / "plimsoll_ci").rglob("*.py")
               if "practice-set" in p.read_text()]
    assert holders == ["plimsoll_ci/digests.py"], holders
