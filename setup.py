"""The one compiled part: `plimsoll_ci.match._runs`, optional. Without a C compiler the package
installs without it and the same runs are found with numpy (everything else is in pyproject)."""

from setuptools import Extension, setup

_SOURCES = ["plimsoll_ci/match/_runs.c", "plimsoll_ci/match/_numbers.c",
            "plimsoll_ci/match/_texts.c", "plimsoll_ci/match/_b64.c"]

setup(ext_modules=[Extension("plimsoll_ci.match._runs", _SOURCES,
                             depends=["plimsoll_ci/match/_runs.h"],
                             optional=True, extra_compile_args=["-O3"])])
