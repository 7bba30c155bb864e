"""The wheel and the sdist are whole: each, installed into a fresh virtual environment, runs
`plimsoll-ci demo` (the bundled example ships as package data), and neither installs a top-level
name that is not ours (the simulator is `plimsoll_sim`, never `sim`); an editable install of the
source runs it too.

One build per session (`python -m build` of a copy of this checkout: the sdist, then the wheel
from the sdist, so the sdist is proven complete too). The environments see the machine's
packages (`--system-site-packages`) and the artifact is installed without its dependencies, so
nothing is downloaded but the build's own backend; `pip check` then says every requirement of
plimsoll-ci is met.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OURS = {"plimsoll_ci", "plimsoll_sim"}  # the only top-level names the distribution may install

pytestmark = pytest.mark.slow


def _copy_checkout(dest: Path) -> Path:
    """This checkout's files (committed or not, as git would list them), without build output."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if (REPO / rel).is_file() and not rel.endswith(".so"):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    return dest


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel, built once per session."""
    if subprocess.run([sys.executable, "-m", "build", "--version"],
                      capture_output=True).returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("`build` is required in CI (the test extra)", pytrace=False)
        pytest.skip("`build` is not installed (pip install build: the test extra)")
    source = _copy_checkout(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist, "editable": source}


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(where)],
                   check=True, capture_output=True)
    return where / "bin"


def _env() -> dict[str, str]:
    """Nothing of this checkout on the path, and no sandbox but a process: the demo falls back
    to it and must say so."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update({"PLIMSOLL_RUNSC": "/nonexistent/runsc",
                "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    return env


def test_the_wheel_carries_the_example_and_no_name_that_is_not_ours(dist: dict) -> None:
    names = zipfile.ZipFile(dist["wheel"]).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == OURS, tops
    for rel in ("plimsoll.yaml", "withheld.json", "loop/kit.py", "task/viewer/replay.html",
                ".pre-commit-config.yaml"):
        assert f"plimsoll_ci/examples/argon/{rel}" in names, rel
    assert "plimsoll_sim/controllers/honest.py" in names


def test_the_sdist_carries_every_example(dist: dict) -> None:
    with tarfile.open(dist["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for rel in ("examples/argon/plimsoll.yaml", "examples/argon/.pre-commit-config.yaml",
                "examples/squeeze/squeeze.yaml", "examples/workflows/ship-scan.yml",
                "plimsoll_sim/__init__.py", "plimsoll_ci/match/_passes.h", "setup.py"):
        assert rel in names, rel


@pytest.mark.parametrize("artifact", ["wheel", "sdist", "editable"])
def test_an_installed_artifact_runs_the_demo_and_says_which_sandbox(
        dist: dict, artifact: str, tmp_path: Path) -> None:
    """The wheel, the sdist, and an editable install of the source (`pip install -e`: the
    package and the simulator from the source folder, the example from its examples/)."""
    bin_ = _venv(tmp_path / "venv")
    what = ["-e", str(dist[artifact])] if artifact == "editable" else [str(dist[artifact])]
    install = subprocess.run([str(bin_ / "python"), "-m", "pip", "install", "--quiet",
                              "--no-deps", *what], capture_output=True, text=True,
                             timeout=900, env=_env(), cwd=tmp_path)
    assert install.returncode == 0, install.stdout + install.stderr
    check = subprocess.run([str(bin_ / "python"), "-m", "pip", "check"], capture_output=True,
                           text=True, env=_env(), cwd=tmp_path)
    assert not [ln for ln in check.stdout.splitlines() if ln.lower().startswith("plimsoll-ci")], \
        check.stdout
    where = subprocess.run([str(bin_ / "python"), "-c", "import plimsoll_ci, plimsoll_sim; "
                            "print(plimsoll_ci.__file__); print(plimsoll_sim.__file__)"],
                           capture_output=True, text=True, env=_env(), cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    home = dist["editable"] if artifact == "editable" else tmp_path / "venv"
    assert all(line.startswith(str(home)) for line in where.stdout.split()), where.stdout
    demo = subprocess.run([str(bin_ / "plimsoll-ci"), "demo", "--flights", "1"],
                          capture_output=True, text=True, timeout=600, env=_env(), cwd=tmp_path)
    out = demo.stdout
    assert demo.returncode == 0, out + demo.stderr
    assert f"example harness {home}" in out  # the packaged copy (the source's when editable)
    assert "task/viewer/replay.html:7:36: withheld value seeds.txt:2" in out
    assert "sandbox: process (configured tier process)" in out
    assert "cheater  on practice: landed 16/16 tier process" in out
