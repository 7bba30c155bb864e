"""Fixtures of the history tests: real git repositories in the shapes the issue names."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.history import GLOB_CONFIG, KIT, LEAK, PYTHON, SEEDS, GitRepo, make_set, viewer


@pytest.fixture(autouse=True)
def _needs_recent_git() -> None:
    from plimsoll_ci.git import MIN_GIT, git_version

    if git_version()[:2] < MIN_GIT:
        pytest.skip(f"history needs git >= {MIN_GIT[0]}.{MIN_GIT[1]} (--diff-merges)")


@pytest.fixture
def argon(tmp_path: Path) -> dict:
    """The Argon shape: the drone task's first commit adds a viewer whose example link names the
    second practice seed; three unrelated commits; the fix 46 minutes later renames the example.
    The seeds file is in the repository but never shipped; the builder is `loop/kit.py`.
    """
    repo = GitRepo(tmp_path / "argon")
    repo.write("plimsoll.yaml", "withheld: withheld.json\nship:\n  drone:\n"
                                f"    command: {PYTHON} loop/kit.py {{out}}\n")
    repo.write("loop/kit.py", KIT)
    repo.write("loop/seeds.txt", "\n".join(SEEDS) + "\n")
    repo.write("lib/physics.mjs", "export const G = 9.81;\n")
    base = repo.commit("harness: builder, seeds, physics", -30)
    repo.write("tasks/drone/TASK.md", "# Drone task\nFly the drone through the gates.\n")
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    first = repo.commit("drone task: first version with replay viewer", 0)
    repo.write("tasks/drone/TASK.md", "# Drone task\nFly the drone through all gates.\n")
    c2 = repo.commit("task: wording", 12)
    repo.write("lib/physics.mjs", "export const G = 9.80665;\n")
    c3 = repo.commit("lib: standard gravity", 25)
    repo.write("README.md", "harness\n")
    c4 = repo.commit("readme", 38)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix = repo.commit("viewer: example link no longer names a real seed", 46)
    wset = make_set(tmp_path)
    return {"repo": repo, "set": wset, "base": base, "first": first, "middle": [c2, c3, c4],
            "fix": fix, "tmp": tmp_path, "leak": LEAK}


@pytest.fixture
def globrepo(tmp_path: Path) -> GitRepo:
    """A repository whose plimsoll.yaml ships tasks/ and viewer/ by globs."""
    repo = GitRepo(tmp_path / "harness")
    repo.write("plimsoll.yaml", GLOB_CONFIG)
    repo.write("seeds.txt", "\n".join(SEEDS) + "\n")
    repo.write("tasks/drone/TASK.md", "# Drone task\n")
    return repo


@pytest.fixture
def wset_path(tmp_path: Path) -> Path:
    return make_set(tmp_path)
