"""Fixtures of the hook tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.harness_repo import make_harness


@pytest.fixture
def harness(tmp_path: Path) -> Path:
    """A committed harness repository (viewer + drone ship sets, keyed withheld set)."""
    return make_harness(tmp_path)


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own user cache (where the hook remembers parsed configs), so one test's runs
    never warm another's; the hook's child processes inherit it."""
    folder = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("PLIMSOLL_CACHE", str(folder))
    return folder
