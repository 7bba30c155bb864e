"""What the eval harness tests share: the example as a git repository, scripted model answers,
an independent digest of a whole folder, and a run of the library or the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.chat_server import Answer, text
from kit.cli import Ran, run_process
from plimsoll_ci.evalharness.run import EvalRequest, EvalResult, run_eval
from plimsoll_ci.model import ModelConfig
from plimsoll_ci.sandbox.command import CommandLimits

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "evalrepo"
KEY_ENV = "PLIMSOLL_EVAL_TEST_KEY"
KEY = "sk-proj-EVALtestKEY7f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


def make_repo(dest: Path) -> Path:
    """The example project, committed in a new repository at `dest`."""
    shutil.copytree(EXAMPLE / "project", dest, ignore=shutil.ignore_patterns("__pycache__"))
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "shelf 0.3.1")
    return dest


def commit(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def tree_digest(root: Path) -> str:
    """SHA-256 over every path under `root` (.git included): kind, mode, bytes or link target."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            h.update(os.path.relpath(full, root).encode() + b"\0" + oct(st.st_mode).encode())
            if os.path.islink(full):
                h.update(os.readlink(full).encode())
            elif os.path.isfile(full):
                with open(full, "rb") as fh:
                    h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


def fix(task: str) -> tuple[str, str]:
    """(path, content) of a task's known-good fix (kept outside the copy)."""
    [path] = [p for p in (EXAMPLE / "fixes" / task).rglob("*.py")]
    return path.relative_to(EXAMPLE / "fixes" / task).as_posix(), path.read_text()


def reply(edits: Sequence[tuple[str, str]] = (), commands: Sequence[Sequence[str]] = (),
          usage: tuple[int, int] = (200, 100)) -> Answer:
    """A scripted answer in the JSON contract."""
    doc = {"edits": [{"path": p, "content": c} for p, c in edits],
           "commands": [list(c) for c in commands]}
    return text(json.dumps(doc), usage=usage)


def tasks(tmp_path: Path, *names: str, extra: dict[str, str] | None = None) -> Path:
    """A task folder holding the example's tasks `names` and `extra` {name: file text}."""
    folder = tmp_path / "tasks"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(EXAMPLE / "tasks" / f"{name}.md", folder / f"{name}.md")
    for name, body in (extra or {}).items():
        (folder / f"{name}.md").write_text(body)
    return folder


def evaluate(url: str, repo: Path, task_dir: Path, out: Path, **kw: Any) -> EvalResult:
    """The library's run against the scripted endpoint at `url`, under gVisor by default; `kw`:
    models (names), max_tokens, timeout, signer, bundle, and any field of EvalRequest."""
    budget = kw.pop("max_tokens", 100_000)
    configs = tuple(ModelConfig(base_url=url, model=m, max_tokens=budget, api_key_env=KEY_ENV,
                                timeout=10.0, retries=0) for m in kw.pop("models", ("scripted",)))
    signer, bundle = kw.pop("signer", None), kw.pop("bundle", None)
    request = EvalRequest(repo=str(repo), tasks=str(task_dir), models=configs, out=str(out),
                          limits=CommandLimits(timeout_s=kw.pop("timeout", 60.0)), **kw)
    return run_eval(request, signer, bundle, environ={KEY_ENV: KEY})


def eval_cli(*args: str, env: dict[str, str] | None = None) -> Ran:
    """`plimsoll-ci ARGS` as a user runs it (a process: the eval's timeouts and signals are its
    own), with the test key in its variable."""
    return run_process(*args, env={KEY_ENV: KEY, **(env or {})})


def user_messages(request_json: dict) -> list[str]:
    """The user messages of one recorded chat request, in order."""
    return [m["content"] for m in request_json["messages"] if m["role"] == "user"]
