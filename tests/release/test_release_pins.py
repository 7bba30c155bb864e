"""What the docs tell a user to pin exists: a full commit id until a release is tagged, and a
release tag names the package's own version."""

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


def test_the_docs_pin_a_commit_or_a_tag_that_exists_never_a_branch_or_a_missing_tag():
    tags = set(_git("tag", "--list").split())
    pins = [(p.relative_to(REPO).as_posix(), a or b) for p in _documents()
            for a, b in PINS.findall(p.read_text())]
    assert pins, "the docs show how to pin the hooks and actions"
    for where, pin in pins:
        ok = re.fullmatch(r"[0-9a-f]{40}", pin) or pin == "COMMIT" or pin in tags
        assert ok, f"{where}: pins {pin!r}: use a full commit id (no release is tagged yet)"


def test_a_pinned_commit_in_the_example_is_a_commit_of_this_repository():
    for p in (REPO / "examples").rglob(".pre-commit-config.yaml"):
        for a, _ in PINS.findall(p.read_text()):
            if re.fullmatch(r"[0-9a-f]{40}", a) and _git("rev-parse", "--is-shallow-repository") \
                    .strip() == "false":
                assert _git("cat-file", "-t", a).strip() == "commit", f"{p}: {a}"


def test_the_package_version_has_one_source_and_a_release_tag_names_it():
    assert version("plimsoll-ci") == __version__
    assert 'dynamic = ["version"]' in (REPO / "pyproject.toml").read_text()
    for tag in _git("tag", "--points-at", "HEAD").split():
        if re.fullmatch(r"v\d+(\.\d+)*\S*", tag):
            assert tag == f"v{__version__}", f"tag {tag} at HEAD, package version {__version__}"
