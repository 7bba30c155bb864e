"""The one compiled part: `plimsoll_ci.match._passes`, optional. Without a C compiler the package
installs without it and the same runs are found with numpy (everything else is in pyproject).

And the bundled example harness: `examples/argon` is copied into the built package
(`plimsoll_ci/examples/argon`) so that `plimsoll-ci demo` runs from an installed wheel; a checkout
and an editable install use the repository's own `examples/` (`commands/demo.py` looks in both).
"""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

_SOURCES = ["plimsoll_ci/match/_passes.c", "plimsoll_ci/match/_numbers.c",
            "plimsoll_ci/match/_texts.c", "plimsoll_ci/match/_b64.c"]
EXAMPLES = ["argon"]  # what `demo` runs; the sdist carries every example (MANIFEST.in)


class BuildPyWithExamples(build_py):
    """`build_py`, then the examples `demo` needs copied under the package in the build folder."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs the repository's examples/ in place
        for name in EXAMPLES:
            source = Path("examples") / name
            if not source.is_dir():
                raise SystemExit(f"setup.py: {source} is missing: the wheel would carry no "
                                 "example for `plimsoll-ci demo` (build from a checkout or the "
                                 "sdist)")
            shutil.copytree(source, Path(self.build_lib) / "plimsoll_ci" / "examples" / name,
                            dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(ext_modules=[Extension("plimsoll_ci.match._passes", _SOURCES,
                             depends=["plimsoll_ci/match/_passes.h"],
                             optional=True, extra_compile_args=["-O3"])],
      cmdclass={"build_py": BuildPyWithExamples})
