"""Real git repositories with fixed dates, in the shapes the history tests need (helpers; the
fixtures are in conftest.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from kit.cli import Ran, run_cli

PYTHON = shlex.quote(sys.executable)  # the builder runs with the interpreter running the tests
START = 1767261600  # 2026-01-01 10:00:00 UTC
SEEDS = [
    "2718281828", "3107713414", "1618033988", "1414213562", "1732050807", "2236067977",
    "2645751311", "3162277660", "3316624790", "3605551275", "4123105625", "4358898943",
    "4582575694", "4795831523", "5196152422", "5385164807",
]
LEAK = SEEDS[1]  # the second practice seed; must never appear in any output

KIT = '''"""Copy the files every drone sandbox gets (the hackathon's builder)."""
import os
import shutil
import sys

out = sys.argv[1]
SHIP = ["tasks", "viewer", "lib"]
for top in SHIP:
    if not os.path.isdir(top):
        continue
    for folder, _dirs, files in os.walk(top):
        for name in files:
            src = os.path.join(folder, name)
            dst = os.path.join(out, src)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)
'''


class GitRepo:
    """A git repository whose commits get fixed author and committer dates."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Ada Auditor")
        self.git("config", "user.email", "ada@example.org")
        self.git("config", "commit.gpgsign", "false")
        self.git("config", "tag.gpgsign", "false")

    def git(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
        proc = subprocess.run(["git", *args], cwd=self.path, capture_output=True,
                              env={**os.environ, **(env or {})})
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args}: {proc.stderr.decode()}")
        return proc.stdout.decode("utf-8", "replace").strip()

    def write(self, rel: str | bytes, data: str | bytes) -> None:
        p = os.path.join(os.fsencode(self.path), os.fsencode(rel))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)

    def remove(self, rel: str) -> None:
        self.git("rm", "-q", "-r", rel)

    def dates(self, minutes: float) -> dict[str, str]:
        stamp = f"@{START + int(minutes * 60)} +0000"
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def commit(self, message: str, minutes: float, *extra: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message, *extra, env=self.dates(minutes))
        return self.git("rev-parse", "HEAD")


def many_steps(repo: GitRepo, steps: int = 150) -> None:
    """`steps` commits on `main` after a first one, written with one fast-import: step `i`
    writes `tasks/drone/log{i % 40}.txt`, which names the leaked seed at steps 5, 55, 105..."""
    lines = []
    for i in range(steps):
        body = f"step {i}\n" + (f"seed {LEAK}\n" if i % 50 == 5 else "")
        data = body.encode()
        lines.append(f"commit refs/heads/main\ncommitter A <a@b> {START + 600 + i * 60} +0000\n"
                     f"data 4\nstep\n" + ("from refs/heads/main^0\n" if i == 0 else "") +
                     f"M 100644 inline tasks/drone/log{i % 40}.txt\ndata {len(data)}\n{body}\n")
    repo.commit("start", 0)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, check=True,
                   input="".join(lines).encode())


def make_set(folder: Path, seeds: list[str] | None = None, name: str = "seeds.txt") -> Path:
    """A withheld set built from a seeds file (ids `seeds.txt:N`), written outside any repo."""
    from plimsoll_ci import withheld

    seeds = SEEDS if seeds is None else seeds
    values = [(f"{name}:{i}", s) for i, s in enumerate(seeds, 1)]
    doc, _warnings = withheld.build_set(values=values)
    out = folder / "withheld.json"
    out.write_text(withheld.dumps(doc))
    return out


def checked_cli(*args: str, cwd: Path) -> Ran:
    """`plimsoll-ci ARGS` in this process (kit.cli.run_cli); its output must never carry the
    leaked value."""
    ran = run_cli(*args, cwd=cwd)
    leaked = LEAK in ran.stdout or LEAK in ran.stderr
    assert not leaked, "the withheld value was printed"  # never show it, not even in a failure
    return ran


def viewer(example: str) -> str:
    return ("<!doctype html>\n<html><body>\n<h1>Replay viewer</h1>\n"
            f'<p>Example: <a href="tracks/{example}">open a replay</a></p>\n</body></html>\n')


GLOB_CONFIG = ("withheld: withheld.json\nship:\n  task:\n"
               "    include: [\"tasks/**\", \"viewer/**\"]\n    exclude: [\"**/*.test.mjs\"]\n")


def history_json(repo: GitRepo, wset: Path, *args: str) -> tuple[int, dict]:
    proc = checked_cli("history", "--set", str(wset), "--format", "json", "--no-progress", *args,
                       cwd=repo.path)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)
