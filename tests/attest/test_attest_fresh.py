"""Fresh sets: drawn with `secrets`, committed before the flights, revealed and checked after."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plimsoll_ci.grading import fresh


def test_a_reveal_matches_its_commitment():
    fs = fresh.draw(16)
    assert fresh.check_reveal(fresh.commit(fs), fresh.reveal(fs))


def test_draw_gives_distinct_sorted_64_bit_seeds_above_the_hunt_horizon_and_a_32_byte_salt():
    fs = fresh.draw(64)
    assert list(fs.seeds) == sorted(set(fs.seeds)) and len(fs.seeds) == 64
    assert all(2**32 <= s < 2**64 - 2**32 for s in fs.seeds)
    assert max(fs.seeds) > 2**63  # over the whole range: not one seed past 2**53 is a fluke
    assert len(fs.salt) == 32
    assert fresh.draw(4).salt != fresh.draw(4).salt
    assert all(2**32 <= s < 2**40 for s in fresh.draw(64, bits=40).seeds)


def test_commitment_is_domain_separated_sha256_of_salt_count_and_sorted_seeds():
    salt = bytes(range(32))
    fs = fresh.make([2718281828, 101], salt=salt)
    message = b"plimsoll-ci fresh-set v1\x00" + salt + struct.pack(">IQQ", 2, 101, 2718281828)
    assert fresh.commit(fs) == hashlib.sha256(message).hexdigest()
    assert fresh.reveal(fs) == {"salt": salt.hex(), "seeds": ["101", "2718281828"]}


def test_a_reveal_writes_seeds_as_decimal_strings_and_reads_only_that_form():
    fs = fresh.make([2**64 - 1, 0, 2**53 + 1], salt=bytes(32))
    doc = fresh.reveal(fs)
    assert doc["seeds"] == ["0", "9007199254740993", "18446744073709551615"]
    assert fresh.from_reveal(doc) == fs
    for bad in (["00"], ["+1"], [" 1"], ["1.0"], ["1e3"], [str(2**64)], [1], ["0x10"], ["١٢"]):
        with pytest.raises(ValueError):
            fresh.from_reveal({"salt": doc["salt"], "seeds": bad})
    # records signed before 64-bit seeds (v1, v2) hold integers: read only when asked for
    legacy = {"salt": doc["salt"], "seeds": [0, 2**53 + 1, 2**64 - 1]}
    assert fresh.from_reveal(legacy, integers=True) == fs
    assert fresh.check_reveal(fresh.commit(fs), legacy, integers=True)
    assert not fresh.check_reveal(fresh.commit(fs), legacy)


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r["seeds"].__setitem__(0, str(int(r["seeds"][0]) + 1)),
        lambda r: r.__setitem__("salt", "00" * 32),
        lambda r: r["seeds"].pop(),
        lambda r: r["seeds"].append(str(int(r["seeds"][-1]) + 1)),
        lambda r: r["seeds"].reverse(),
        lambda r: r.__setitem__("salt", r["salt"].upper()),
        lambda r: r.__setitem__("extra", 1),
        lambda r: r["seeds"].__setitem__(0, True),
        lambda r: r["seeds"].__setitem__(0, int(r["seeds"][0])),
        lambda r: r["seeds"].__setitem__(0, "0" + r["seeds"][0]),
        lambda r: r.__setitem__("seeds", []),
    ],
)
def test_a_reveal_that_does_not_match_its_commitment_is_refused(edit):
    fs = fresh.draw(3)
    reveal = fresh.reveal(fs)
    edit(reveal)
    assert not fresh.check_reveal(fresh.commit(fs), reveal)


def test_check_reveal_refuses_garbage_without_raising():
    for junk in (None, [], "x", {"salt": 1, "seeds": 2}, {"seeds": [1]}):
        assert not fresh.check_reveal("0" * 64, junk)
    fs = fresh.draw(1)
    assert not fresh.check_reveal(None, fresh.reveal(fs))


@settings(max_examples=50, deadline=None)
@given(seeds=st.sets(st.integers(0, 2**64 - 1), min_size=1, max_size=20), salt=st.binary(min_size=32, max_size=32))
def test_every_reveal_round_trips_and_binds_its_seeds(seeds, salt):
    fs = fresh.make(seeds, salt=salt)
    assert fresh.check_reveal(fresh.commit(fs), fresh.reveal(fs))
    assert fresh.from_reveal(fresh.reveal(fs)) == fs
    other = fresh.make(seeds ^ {max(seeds) + 1 if max(seeds) < 2**64 - 1 else 0}, salt=salt)
    assert not fresh.check_reveal(fresh.commit(fs), fresh.reveal(other))


@pytest.mark.parametrize("count, bits", [(0, 64), (-1, 64), (1, 39), (1, 65), (1, 32)])
def test_draw_refuses_an_impossible_request(count, bits):
    with pytest.raises(ValueError):
        fresh.draw(count, bits)
