"""The one compiled part: `plimsoll_ci.match._runs`, optional. Without a C compiler the package
installs without it and the same runs are found with numpy (everything else is in pyproject)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("plimsoll_ci.match._runs", ["plimsoll_ci/match/_runs.c"],
                             optional=True, extra_compile_args=["-O3"])])
