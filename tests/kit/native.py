"""What the tests of the compiled part share: `need` (skip without it, fail in CI) and its
sources (the `portable` fixture of conftest.py builds them again without SSE2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plimsoll_ci.match import classes

SOURCES = [Path(classes.__file__).with_name(name) for name in ("_passes.c", "_numbers.c", "_texts.c", "_b64.c")]
IN_CI = os.environ.get("CI") == "true"


def need(module: object, what: str) -> None:
    """Skip when `module` is missing here (a machine without a C compiler); fail in CI."""
    if module is None:
        if IN_CI:
            pytest.fail(f"CI=true but {what} is missing: the package must be built with its C part")
        pytest.skip(f"{what} is not built here (no C compiler when the package was installed)")
