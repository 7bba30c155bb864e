import datetime as dt

import pytest

from shelf.dates import loan_days, overdue_days, parse_day


def test_parse_day():
    assert parse_day(" 2024-03-01 ") == dt.date(2024, 3, 1)


def test_a_loan_includes_its_first_and_last_day():
    days = loan_days(parse_day("2024-02-27"), parse_day("2024-03-01"))
    assert days == [dt.date(2024, 2, 27), dt.date(2024, 2, 28), dt.date(2024, 2, 29),
                    dt.date(2024, 3, 1)]


def test_a_loan_returned_the_same_day_lasts_one_day():
    assert loan_days(dt.date(2024, 5, 1), dt.date(2024, 5, 1)) == [dt.date(2024, 5, 1)]


def test_a_loan_cannot_end_before_it_starts():
    with pytest.raises(ValueError):
        loan_days(dt.date(2024, 5, 2), dt.date(2024, 5, 1))


def test_overdue_days():
    assert overdue_days(dt.date(2024, 5, 1), dt.date(2024, 5, 4)) == 3
    assert overdue_days(dt.date(2024, 5, 4), dt.date(2024, 5, 1)) == 0
