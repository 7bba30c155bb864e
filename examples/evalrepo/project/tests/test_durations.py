import pytest

from shelf.durations import format_duration, parse_duration


@pytest.mark.parametrize("text, seconds", [("3d", 3 * 86400), ("12h", 43200), ("1w", 604800)])
def test_single_units(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text, seconds", [("1w2d", 9 * 86400), ("1h30m", 5400),
                                           ("2d 4h", 2 * 86400 + 4 * 3600)])
def test_units_run_together(text, seconds):
    assert parse_duration(text) == seconds


def test_round_trip():
    for seconds in (59, 3600, 90061, 1209600):
        assert parse_duration(format_duration(seconds)) == seconds


def test_not_a_duration():
    with pytest.raises(ValueError):
        parse_duration("soon")
