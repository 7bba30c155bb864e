"""Fixtures of the eval harness tests: the scripted chat server, a real git copy of the example."""

from __future__ import annotations

import sys
from pathlib import Path

for _kit in ("model", "attest"):  # the scripted chat server; the grading records' demo
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _kit))

import pytest  # noqa: E402
from chat_server import ChatServer, chat_server  # noqa: E402, F401 (the fixture)
from evalkit import make_repo, tree_digest  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path):
    """The example project as a fresh git repository; at teardown, the test fails unless the
    repository (its .git included) is byte for byte what it was before the test."""
    path = make_repo(tmp_path / "origin")
    before = tree_digest(path)
    yield path
    assert tree_digest(path) == before, "the original repository changed"
