"""Fixtures for the sandbox tests: gVisor and docker are required in CI, optional elsewhere.

Outside CI a missing runsc / dockerd skips with the reason; with CI=true it fails, so a CI machine
that lost its sandbox can never pass by skipping the tests that matter.
"""

from __future__ import annotations

import os

import pytest


def _need(provider: str) -> None:
    from plimsoll_ci import sandbox

    ok, why = sandbox.available(provider)
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
