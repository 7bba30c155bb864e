"""A harness repository in the Argon shape for the hook and action tests (real git, keyed set)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kit.cli import Ran, run_process

CHECKOUT = Path(__file__).resolve().parents[2]
KEY = "hook-test-key-not-a-secret"
SEED = "3107713414"  # the second practice seed: the viewer leak of the story
PRACTICE = ["2710448913", SEED] + [str(1_000_000_007 + 7919 * i) for i in range(14)]

KIT = """\
import shutil, sys
from pathlib import Path
out = Path(sys.argv[1])
for folder in ("viewer", "tasks/drone"):
    shutil.copytree(folder, out / folder, dirs_exist_ok=True)
"""

CONFIG = """\
withheld: withheld.json
key: {env: PLIMSOLL_WITHHELD_KEY}
ship:
  drone:
    command: %s loop/kit.py {out}
    inputs: ["loop/**", "viewer/**", "tasks/**"]
  viewer:
    include: ["viewer/**", "tasks/**"]
    exclude: ["**/*.test.mjs"]
"""


def git(repo: Path, *args: str, env: dict | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def hook_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF", "PRE_COMMIT_SOURCE",
                "PRE_COMMIT_ORIGIN", "GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE"):
        env.pop(var, None)
    env["PLIMSOLL_WITHHELD_KEY"] = KEY
    env.update(extra)
    return env


def make_harness(root: Path, python: str = "python3") -> Path:
    """A committed harness: viewer + drone task shipped, seeds outside the repo, keyed set."""
    from plimsoll_ci import withheld

    repo = root / "harness"
    private = root / "private"
    private.mkdir(parents=True)
    (private / "seeds.txt").write_text("\n".join(PRACTICE) + "\n")
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "maintainer@example.org")
    git(repo, "config", "user.name", "Maintainer")
    git(repo, "config", "commit.gpgsign", "false")
    for rel, text in {
        "viewer/replay.html": '<a href="seed-EXAMPLE.json">example replay</a>\n',
        "viewer/app.mjs": "export const speed = 2;\n",
        "viewer/app.test.mjs": "// tests\n",
        "tasks/drone/TASK.md": "Fly the drone through the gates.\n",
        "loop/kit.py": KIT,
        "README.md": "A harness.\n",
        "plimsoll.yaml": CONFIG % python,
    }.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    values = withheld.read_values(str(private / "seeds.txt"))
    values = [(f"seeds.txt:{i}", v) for i, (_, v) in enumerate(values, 1)]
    doc, _ = withheld.build_set(values=values, key=KEY.encode())
    (repo / "withheld.json").write_text(withheld.dumps(doc))
    git(repo, "add", "-A")
    commit(repo, "harness")
    return repo


def leak(repo: Path) -> None:
    (repo / "viewer/replay.html").write_text(f'<a href="seed-{SEED}.json">example replay</a>\n')


def fix(repo: Path) -> None:
    (repo / "viewer/replay.html").write_text('<a href="seed-EXAMPLE.json">example replay</a>\n')


def repo_cli(repo: Path, *args: str, env: dict | None = None) -> Ran:
    """`plimsoll-ci ARGS` as a process in `repo`, with the hooks' environment (`hook_env()`) unless
    `env` is given: the hostile-repository tests need the boundary (git runs in the child)."""
    return run_process(*args, cwd=repo, env=env or hook_env(), module="plimsoll_ci.cli",
                       inherit=False)
