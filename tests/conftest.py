"""Fixtures shared by every test area.

- `gvisor`, `docker_runsc`: the sandbox providers. Outside CI a missing runsc / dockerd skips with
  the reason; with CI=true it fails, so a CI machine that lost its sandbox can never pass by
  skipping the tests that matter.
- `leak`: the leak guard of `tests/scan/scankit.py`; at teardown it also checks everything the
  test printed for a withheld value.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "scan"))

from scankit import LeakGuard  # noqa: E402


def _need(provider: str) -> None:
    from plimsoll_ci.sandbox.all_providers import PROVIDERS

    ok, why = PROVIDERS[provider].available()
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{provider} is required in CI and is unavailable: {why}", pytrace=False)
    pytest.skip(f"{provider} unavailable here: {why}")


@pytest.fixture
def gvisor() -> str:
    """The gvisor provider, or a skip (outside CI) / failure (CI=true) saying why not."""
    _need("gvisor")
    return "gvisor"


@pytest.fixture
def docker_runsc() -> str:
    """The docker provider with the runsc runtime, or skip / fail as for gvisor."""
    _need("docker")
    return "docker"


@pytest.fixture
def leak(capfd: pytest.CaptureFixture[str]):
    """The leak guard; at teardown it also checks everything the test printed."""
    guard = LeakGuard()
    yield guard
    out, err = capfd.readouterr()
    guard.text(out, "captured stdout")
    guard.text(err, "captured stderr")
