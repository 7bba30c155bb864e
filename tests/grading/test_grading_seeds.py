"""Seed lists and seed files: parsed strictly, named by id, sealed seeds never shown."""

from __future__ import annotations

import pytest

import plimsoll_sim as sim
from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh, seeds


def test_a_list_with_ranges_gives_seeds_named_in_order():
    assert seeds.parse_seeds("1, 2,5-7") == [1, 2, 5, 6, 7]
    assert seeds.given("9,3") == [seeds.Seed("seeds:1", 9, True), seeds.Seed("seeds:2", 3, True)]


def test_practice_names_the_simulators_practice_set():
    assert [s.value for s in seeds.given("practice")] == list(sim.PRACTICE_SEEDS)
    assert seeds.practice()[1].id == "practice:2"


def test_a_held_out_file_is_named_by_line_and_never_shown(tmp_path):
    f = tmp_path / "held-out.txt"
    f.write_text("# held out\n6000000001\n\n6000000002  # second\n")
    got = seeds.held_out(str(f))
    assert [(s.id, s.value, s.shown) for s in got] == [
        ("seed-file:1", 6000000001, False), ("seed-file:2", 6000000002, False)]


def test_a_fresh_set_is_flown_sorted_as_fresh_n():
    fs = fresh.make([3000000002, 3000000001])
    assert [(s.id, s.value) for s in seeds.fresh(fs)] == [("fresh:1", 3000000001),
                                                            ("fresh:2", 3000000002)]


@pytest.mark.parametrize("text, message", [
    ("1-x", "item 1 '1-x' is not a seed"),
    ("5,9-3", "item 2 '9-3'"),
    ("-1", "item 1"),
    (f"0-{seeds.MAX_SEEDS}", f"more than {seeds.MAX_SEEDS} seeds"),
    (str(2**64), "0..2**64-1"),
])
def test_a_bad_list_is_bad_input_naming_the_item(text, message):
    with pytest.raises(BadInput, match=message.replace("*", r"\*")):
        seeds.parse_seeds(text)


def test_a_seed_file_error_names_the_file_and_line(tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("6000000001\nsix\n")
    with pytest.raises(BadInput, match=r"seed file .*s\.txt line 2: item 1 'six'"):
        seeds.read_seed_file(str(f))
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(BadInput, match="no seeds in it"):
        seeds.read_seed_file(str(tmp_path / "empty.txt"))
    with pytest.raises(BadInput, match=r"missing\.txt: cannot read"):
        seeds.read_seed_file(str(tmp_path / "missing.txt"))
