"""Fixtures of the eval harness tests: the scripted chat server, a real git copy of the example."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.chat_server import ChatServer, chat_server  # noqa: F401 (the fixture)
from kit.evalharness import make_repo, tree_digest


@pytest.fixture
def repo(tmp_path: Path):
    """The example project as a fresh git repository; at teardown, the test fails unless the
    repository (its .git included) is byte for byte what it was before the test."""
    path = make_repo(tmp_path / "origin")
    before = tree_digest(path)
    yield path
    assert tree_digest(path) == before, "the original repository changed"
