"""Reading statistics: loans per title summarised for the monthly report."""

from __future__ import annotations


def summary(loans: list[int]) -> dict[str, float | int | None]:
    """Count, least, most and mean of a month's loan counts (None for a month without loans)."""
    if not loans:
        return {"count": 0, "min": None, "max": None, "mean": None}
    return {
        "count": len(loans),
        "min": min(loans),
        "max": max(loans),
        "mean": round(sum(loans) / len(loans), 2),
    }


def busiest(loans_by_title: dict[str, int], n: int = 3) -> list[str]:
    """The `n` titles loaned most, most first (ties by title)."""
    ranked = sorted(loans_by_title.items(), key=lambda item: (-item[1], item[0]))
    return [title for title, _ in ranked[:n]]
