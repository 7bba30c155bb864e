"""Fixtures of the sandbox tests."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def private_tmp(monkeypatch):
    """A TMPDIR of this test's own, so whatever a grading leaves there is this test's (made in
    the real temp folder: a sandbox's file server must be able to reach the staged files)."""
    tmp = Path(tempfile.mkdtemp(prefix="plimsoll-test-tmpdir-"))
    tmp.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(tmp))
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)
