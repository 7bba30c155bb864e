"""A real project nobody here wrote: psf/requests 2.32.3 from its sdist (which holds its tests),
with its real dependencies from PyPI in a virtual environment, and one bug injected.

Built once and cached (`$PLIMSOLL_TEST_CACHE`, else the system temp folder); a build that broke
half way is built again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from kit.evalharness import commit, git

VERSION = "2.32.3"
DEPS = ("urllib3", "idna", "certifi", "charset_normalizer", "pytest")
FIXED = "        return self._store[key.lower()][1]\n"
BUGGY = "        return self._store[key][1]\n"  # a lookup that is no longer case-insensitive
MODULE = "src/requests/structures.py"
TEST = "tests/test_structures.py"
TASK = f"""---
test: [pytest, -q, {TEST}]
touch: [{MODULE}]
---
# Header lookups are case-sensitive again

`CaseInsensitiveDict()["ACCEPT"]` raises KeyError when the key was set as `Accept`. Header
names are case-insensitive: every spelling must find the value. Look at {MODULE}.
"""


def _cache() -> Path:
    return Path(os.environ.get("PLIMSOLL_TEST_CACHE") or tempfile.gettempdir()) / \
        f"plimsoll-test-requests-{VERSION}"


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-3000:]}")


def environment() -> tuple[Path, Path]:
    """(the sdist's tarball, a venv with requests' dependencies and pytest), built once, under a
    lock (a venv names its own path, so it is built where it is used; `ready` is written last)."""
    import fcntl

    cache = _cache()
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.parent / f"{cache.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cache / "ready").exists():
            shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir()
            _run(sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:",
                 "--no-deps", f"requests=={VERSION}", "-d", str(cache / "sdist"))
            _run(sys.executable, "-m", "venv", str(cache / "venv"))
            _run(str(cache / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", *DEPS)
            (cache / "ready").write_text("ok\n")
    [sdist] = (cache / "sdist").glob("requests-*.tar.gz")
    return sdist, cache / "venv"


def checkout(sdist: Path, dest: Path, bug: bool = True) -> Path:
    """The sdist unpacked at `dest` as a git repository, with the bug committed."""
    with tarfile.open(sdist) as tar:
        tar.extractall(dest.parent, filter="data")
    (dest.parent / f"requests-{VERSION}").rename(dest)
    git(dest, "init", "-q", "-b", "main")
    commit(dest, f"requests {VERSION}")
    if bug:
        path = dest / MODULE
        text = path.read_text()
        assert FIXED in text
        path.write_text(text.replace(FIXED, BUGGY))
        commit(dest, "inject a bug")
    return dest
