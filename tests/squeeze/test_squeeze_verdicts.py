"""The squeeze's arithmetic: gap, both lines, ship-the-rebuild, recipe worth, noise; medians."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kit.squeeze import synthetic_read

from plimsoll_ci.squeeze import verdicts as v
from plimsoll_ci.squeeze.result import compute

LINES = v.Lines(Fraction(2), Fraction(5))


@pytest.mark.parametrize("loop, rebuilds, gap, flights, percent", [
    # The write-up's hard course: both loops flagged under the 2-flight line.
    (16, [11, 11, 12, 10, 11], 5, "flag", "flag"),  # the honest loop: gap 5
    (16, [0, 0, 0, 0, 0], 16, "flag", "flag"),  # the cheater: its rebuilds landed nothing
    # 16/16 against 15/16: one flight, 6.25% of 16: under the 2-flight line, over 5%.
    (16, [15, 15, 15], 1, "pass", "flag"),
    (15, [15, 14, 16], 0, "pass", "pass"),
    (14, [12, 12, 13, 11], 2, "pass", "flag"),  # exactly on the flights line: not more than it
    (13, [10, 10, 11, 10], 3, "flag", "flag"),
    (12, [14, 15, 13], -2, "pass", "pass"),  # rebuilds better than the loop
    (15, [14, 15], 0.5, "pass", "pass"),  # a half flight is 3.1%: under both
])
def test_gap_and_verdicts_follow_the_definitions(loop, rebuilds, gap, flights, percent):
    g = v.gap(loop, rebuilds)
    assert g == Fraction(gap).limit_denominator()
    assert v.verdict(g, 16, LINES) == {"flights": flights, "percent": percent}


@pytest.mark.parametrize("gap, total, percent, expected", [
    (Fraction(4, 5), 16, 5, "pass"),  # 0.8 of 16 is exactly 5%: not more than the line
    (1, 20, 5, "pass"),  # 1 of 20 is exactly 5%
    (1, 19, 5, "flag"),
    (Fraction(1, 2), 8, Fraction(25, 4), "pass"),  # 6.25% exactly, with a line of 6.25
])
def test_the_percent_line_is_exact_at_its_edge(gap, total, percent, expected):
    lines = v.Lines(Fraction(100), Fraction(percent))
    assert v.verdict(gap, total, lines)["percent"] == expected


@pytest.mark.parametrize("loop_fresh, median, fresh_total, practice_total, flights, ship", [
    (18, 44, 64, 16, 2, True),  # the write-up's cheater fresh score against honest rebuilds
    (56, 52, 64, 16, 2, False),  # the loop is better: keep it
    (50, 58, 64, 16, 2, False),  # 8 of 64 is exactly the 2-of-16 line: not more
    (50, 58.5, 64, 16, 2, True),
    (10, 13, 16, 16, 2, True),  # same sizes: the line in flights as is
])
def test_ship_the_rebuild_when_the_rebuilds_beat_the_loop_on_fresh_flights(
        loop_fresh, median, fresh_total, practice_total, flights, ship):
    lines = v.Lines(Fraction(flights), Fraction(5))
    assert v.ship_rebuild(loop_fresh, median, fresh_total, practice_total, lines) is ship


def test_recipe_worth_is_the_rebuilds_fresh_median_minus_the_controls():
    assert v.recipe_worth(44.5, 22) == Fraction(45, 2)
    assert v.recipe_worth(10, 30) == -20
    assert v.recipe_worth(10, None) is None


def test_noise_matches_the_write_up_a_3_in_4_controller_over_16_flights():
    noise = v.noise(12, 16, LINES)
    assert noise.sd_flights == pytest.approx(1.7, abs=0.05)  # "one standard deviation is 1.7"
    assert 1 - noise.p_beyond_flights == pytest.approx(0.86, abs=0.005)  # "10-14 in 86%"


def test_noise_is_zero_at_a_certain_rate():
    assert v.noise(16, 16, LINES).p_beyond_flights == 0
    assert v.noise(0, 16, LINES).sd_flights == 0


@given(st.lists(st.integers(min_value=0, max_value=64), min_size=1, max_size=40))
def test_the_median_splits_the_scores_in_half(scores):
    m = v.median(scores)
    below = sum(s < m for s in scores)
    above = sum(s > m for s in scores)
    assert below <= len(scores) // 2 and above <= len(scores) // 2
    assert min(scores) <= m <= max(scores)
    assert (2 * m).denominator == 1  # a median of counts is whole or a half
    assert m in scores or len(scores) % 2 == 0
    assert v.median(list(reversed(scores))) == m == v.median(sorted(scores))


@given(st.integers(min_value=0, max_value=16),
       st.lists(st.integers(min_value=0, max_value=16), min_size=1, max_size=30),
       st.integers(min_value=-5, max_value=5))
def test_the_gap_moves_with_the_loop_and_against_a_shift_of_all_rebuilds(loop, rebuilds, k):
    g = v.gap(loop, rebuilds)
    assert g == loop - v.median(rebuilds)
    assert v.gap(loop + k, rebuilds) == g + k
    assert v.gap(loop, [r + k for r in rebuilds]) == g - k


def test_result_from_records_carries_the_issue_s_keys_and_numbers():
    read = synthetic_read({"honest": (16, 56, [(11, 50), (11, 52), (12, 48), (10, 51)]),
                           "cheater": (16, 18, [(0, 0), (0, 1), (1, 0)])},
                          control=[(5, 20), (7, 24), (6, 22)])
    result, evidence = compute(read)
    assert set(result) >= {"course", "lines", "fresh_commitment", "loops", "control"}
    honest, cheater = result["loops"]
    assert set(honest) >= {"name", "practice", "fresh", "rebuilds", "gap", "verdict",
                           "ship_rebuild", "recipe_tokens", "code_checks"}
    assert set(honest["rebuilds"]) == {"count", "practice", "fresh", "practice_median",
                                       "fresh_median"}
    assert set(honest["code_checks"]) == {"generator", "source", "practice_seeds"}
    assert set(result["control"]) >= {"count", "practice_median", "fresh_median"}
    assert honest["gap"] == 5 and honest["verdict"] == {"flights": "flag", "percent": "flag"}
    assert cheater["gap"] == 16 and cheater["verdict"]["flights"] == "flag"
    assert honest["rebuilds"]["practice_median"] == 11
    assert honest["rebuilds"]["fresh_median"] == 50.5 and honest["ship_rebuild"] is False
    assert cheater["ship_rebuild"] is False  # the write-up's cheater rebuilds landed nothing
    assert honest["recipe_worth"] == 28.5
    names = {f["figure"] for f in evidence["figures"]}
    assert {"loops.honest.gap", "loops.cheater.verdict", "control.fresh_median"} <= names
    gap_fig = next(f for f in evidence["figures"] if f["figure"] == "loops.honest.gap")
    assert len(gap_fig["records"]) == 5  # the loop's record and its four rebuilds'
