"""What the docs and examples tell a user to pin: a release tag that names the package's own
version, so the examples never lag behind the code they ship with (a commit id written into the
repository is behind by the time it is committed, and fell 150 commits behind before); the docs
may also show the `COMMIT` placeholder."""

from __future__ import annotations

import re
import subprocess
from importlib.metadata import version
from pathlib import Path

from plimsoll_ci import __version__

REPO = Path(__file__).resolve().parents[2]
# `rev: X` of a pre-commit config, and `uses: plimsoll-ci/plimsoll-ci/...@X` of a workflow
PINS = re.compile(r"(?:^\s*rev:\s*([\w.-]+))|(?:uses:\s*plimsoll-ci/plimsoll-ci/\S*@([\w.-]+))",
                  re.M)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                          check=False).stdout


def _documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
            *sorted((REPO / "examples").rglob("*.y*ml")), *sorted((REPO / "examples").rglob("*.md"))]


def _pins(paths: list[Path]) -> list[tuple[str, str]]:
    return [(p.relative_to(REPO).as_posix(), a or b) for p in paths
            for a, b in PINS.findall(p.read_text())]


def test_every_example_pins_the_release_of_this_version():
    examples = [*sorted((REPO / "examples").rglob("*.y*ml")),
                *sorted((REPO / "examples").rglob(".pre-commit-config.yaml"))]
    pins = _pins(examples)
    assert {w for w, _ in pins} >= {"examples/argon/.pre-commit-config.yaml",
                                   "examples/workflows/ship-scan.yml",
                                   "examples/workflows/grade.yml"}
    for where, pin in pins:
        assert pin == f"v{__version__}", (f"{where}: pins {pin!r}; pin the release this "
                                          f"example ships with, v{__version__}")


def test_the_docs_pin_this_release_or_show_the_placeholder():
    pins = _pins(_documents())
    assert pins, "the docs show how to pin the hooks and actions"
    for where, pin in pins:
        assert pin in (f"v{__version__}", "COMMIT"), \
            f"{where}: pins {pin!r}: show v{__version__} (this release) or COMMIT"


def test_the_pin_check_refuses_a_commit_id_and_another_version(tmp_path: Path):
    stale = tmp_path / "pre-commit.yaml"
    for pin in ("eb0c3559ae5629422eb997989fbfe4776bf1645b", "v0.0.9", "main"):
        stale.write_text(f"repos:\n-   repo: x\n    rev: {pin}\n")
        (found,) = PINS.findall(stale.read_text())
        assert found[0] != f"v{__version__}"


def test_the_package_version_has_one_source_and_a_release_tag_names_it():
    assert version("plimsoll-ci") == __version__
    assert 'dynamic = ["version"]' in (REPO / "pyproject.toml").read_text()
    for tag in _git("tag", "--points-at", "HEAD").split():
        if re.fullmatch(r"v\d+(\.\d+)*\S*", tag):
            assert tag == f"v{__version__}", f"tag {tag} at HEAD, package version {__version__}"


USES = re.compile(r"uses:\s*plimsoll-ci/plimsoll-ci/(actions/[\w-]+)@([\w.-]+)")


def test_a_workflow_uses_an_action_this_release_has():
    for p in sorted((REPO / "examples" / "workflows").glob("*.yml")):
        for action, _pin in USES.findall(p.read_text()):
            assert (REPO / action / "action.yml").is_file(), f"{p.name}: no {action}/action.yml"
