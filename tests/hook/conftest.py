"""Fixtures of the hook tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_repo import make_harness


@pytest.fixture
def harness(tmp_path: Path) -> Path:
    """A committed harness repository (viewer + drone ship sets, keyed withheld set)."""
    return make_harness(tmp_path)
