from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "scan"))

from scankit import LeakGuard  # noqa: E402


@pytest.fixture
def leak(capfd: pytest.CaptureFixture[str]):
    """The leak guard; at teardown it also checks everything the test printed."""
    guard = LeakGuard()
    yield guard
    out, err = capfd.readouterr()
    guard.text(out, "captured stdout")
    guard.text(err, "captured stderr")
