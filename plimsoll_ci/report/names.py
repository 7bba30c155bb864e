"""How a report shows a name (a shipped path, a decode chain, a note) a person reads."""

from __future__ import annotations


def shown(text: str) -> str:
    """`text` as a report shows it."""
    return text
