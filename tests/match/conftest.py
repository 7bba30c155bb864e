"""The `portable` build of the compiled part, and `module` (the installed build, then the
portable one), for every test of it that compares builds."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sysconfig

import pytest
from kit.native import SOURCES, need

from plimsoll_ci.match import classes


@pytest.fixture(scope="session")
def portable(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The extension built again without SSE2: the plain-C path of other processors."""
    cc = shutil.which("cc") or shutil.which("gcc")
    need(cc, "a C compiler")
    out = tmp_path_factory.mktemp("portable") / ("_passes" + sysconfig.get_config_var("EXT_SUFFIX"))
    # (.ci/sanitize builds this one with the sanitizers too: PLIMSOLL_PASSES_CFLAGS)
    extra = os.environ.get("PLIMSOLL_PASSES_CFLAGS", "").split()
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-DPLIMSOLL_PASSES_PORTABLE", *extra,
                    f"-I{sysconfig.get_paths()['include']}", *map(str, SOURCES), "-o", str(out)],
                   check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("_passes", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["sse2", "portable"])
def module(request: pytest.FixtureRequest) -> object:
    """The compiled part as installed (SSE2 on this machine), or built without SSE2."""
    if request.param == "sse2":
        need(classes.native, "the compiled part (plimsoll_ci.match._passes)")
        return classes.native
    return request.getfixturevalue("portable")
