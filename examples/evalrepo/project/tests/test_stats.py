from shelf.stats import busiest, summary


def test_summary():
    assert summary([3, 1, 2]) == {"count": 3, "min": 1, "max": 3, "mean": 2.0}


def test_a_month_without_loans():
    assert summary([]) == {"count": 0, "min": None, "max": None, "mean": None}


def test_busiest():
    loans = {"Emma": 4, "Ulysses": 9, "Dracula": 4, "Beloved": 1}
    assert busiest(loans, 3) == ["Ulysses", "Dracula", "Emma"]
