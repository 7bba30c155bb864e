"""Fixtures of the ship scan's tests."""

from __future__ import annotations

import pytest

from plimsoll_ci import pool
from plimsoll_ci.shipscan import scan


@pytest.fixture
def spy_start(monkeypatch):
    """Every `pool.start` the ship scan makes, with the jobs it asked for."""
    calls: list[int] = []
    real = pool.start

    def start(jobs, init=None, initargs=()):
        calls.append(jobs)
        return real(jobs, init, initargs)

    monkeypatch.setattr(scan.pool, "start", start)
    return calls
