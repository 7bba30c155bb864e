"""Code checks through the ship-scan engine: the generator constant in any notation, the
generator's source however renamed or reformatted, practice seeds; entry ids, never values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.squeeze import EXAMPLE

import plimsoll_sim as sim
from plimsoll_ci.squeeze import checks

SCAN = None


def scanner():
    global SCAN
    if SCAN is None:
        SCAN = checks.scanner(sim.PRACTICE_SEEDS)
    return SCAN


@pytest.mark.parametrize("source, carries", [
    ("M = 0x5EEDD20EC0A57E4B\n", {"generator": True, "source": False, "practice_seeds": False}),
    ("M = 0x5EED_D20E_C0A5_7E4B\n", {"generator": True, "source": False, "practice_seeds": False}),
    ("M = 6840354369849097803\n", {"generator": True, "source": False, "practice_seeds": False}),
    ("M = 6_840_354_369_849_097_803\n", {"generator": True, "source": False,
                                         "practice_seeds": False}),
    ("K = 'seed-3107713414.json'\n", {"generator": False, "source": False,
                                      "practice_seeds": True}),
    ("x = 0x5EEDD20EC0A57E4C\n", {"generator": False, "source": False, "practice_seeds": False}),
    ("x = 31077134140\n", {"generator": False, "source": False, "practice_seeds": False}),
])
def test_the_generator_constant_and_practice_seeds_in_any_notation(source, carries):
    found = checks.check({"controller.py": source.encode()}, scanner())
    assert checks.carries(found) == carries


def test_a_renamed_reformatted_copy_of_the_generator_is_its_source():
    text = (Path(sim.__file__).parent / "generator.py").read_text()
    text = text.replace("mix64", "scramble").replace("Stream", "Draws").replace("    ", "  ")
    text = text.replace("MAGIC = 0x5EEDD20EC0A57E4B", "MAGIC = int('5eedd20e' 'c0a57e4b', 16)")
    text = text.replace("0x5EED_D20E_C0A5_7E4B = 6840354369849097803", "(split below)")
    found = checks.check({"tools/gen.py": text.encode()}, scanner())
    assert found["source"] and found["source"][0].startswith("tools/gen.py (overlap ")
    assert not found["generator"]  # the constant is split, the source is still recognised


def test_the_example_cheater_rebuilds_carry_what_their_files_say():
    got = {}
    for name in ("c1", "c2.py", "c3.py", "c5.py", "c7.py", "c8.py"):
        files = checks.controller_files(EXAMPLE / "rebuilds" / "cheater" / name)
        got[name] = checks.carries(checks.check(files, scanner()))
    assert got["c1"] == {"generator": True, "source": True, "practice_seeds": False}
    assert got["c2.py"] == {"generator": True, "source": False, "practice_seeds": False}
    assert got["c5.py"] == {"generator": True, "source": True, "practice_seeds": False}
    assert got["c7.py"] == {"generator": True, "source": False, "practice_seeds": False}
    assert not any(got["c3.py"].values()) and not any(got["c8.py"].values())


def test_findings_name_places_and_entries_never_values():
    files = checks.controller_files(EXAMPLE / "loops" / "cheater")
    found = checks.check(files, scanner())
    assert found["practice_seeds"] == [f"practice:{n}" for n in range(1, 17)]
    assert found["generator"] and all(p.startswith("flightgen.py:") for p in found["generator"])
    assert set(found["files"]) == {"controller.py", "flightgen.py"}
    text = json.dumps(found)
    for seed in sim.PRACTICE_SEEDS:
        assert str(seed) not in text
    assert "6840354369849097803" not in text and "5EEDD20E" not in text.upper()


def test_the_same_bytes_give_the_same_findings_every_time():
    files = checks.controller_files(EXAMPLE / "rebuilds" / "cheater" / "c5.py")
    a = checks.check(files, checks.scanner(sim.PRACTICE_SEEDS))
    b = checks.check(files, checks.scanner(sim.PRACTICE_SEEDS))
    assert a == b
