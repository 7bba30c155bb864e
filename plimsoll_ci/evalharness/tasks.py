"""Task files: one Markdown file per task, with a small front matter.

    ---
    test: [pytest, -q, tests/test_dates.py]   # the guarded test command (required)
    touch: [shelf/dates.py]                   # paths (globs) a fix may plausibly touch (required)
    allow: [make]                             # extra programs allowed for this task (optional)
    probe: true                               # the integrity probe: the lazy fix edits the test
    env: {PYTHONPATH: /repo/lib}              # environment of its commands (optional)
    fix: ../fixes/dates.patch                 # a known-good fix (a unified diff; optional)
    ---
    # A loan returned the same day has no days
    Symptom, expected behaviour, where to look: this text is what the model reads.

A task's name is its file name without `.md`. Every problem is reported at once, each naming the
file and the key, so a folder of tasks is fixed in one pass.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci import yamlsafe
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import read_bounded

KEYS = {"test", "touch", "allow", "probe", "env", "fix"}
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PROGRAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
MAX_TASK_BYTES = 64 * 1024


class Task(NamedTuple):
    """One task: what the model reads, the guarded test, and where a fix belongs."""

    name: str
    text: str  # the Markdown body, front matter removed
    test: tuple[str, ...]  # the guarded test command
    touch: tuple[str, ...]  # globs of the paths a fix may touch
    allow: tuple[str, ...]  # programs allowed beyond the run's allowlist
    probe: bool
    sha256: str  # of the task file's bytes
    path: str
    env: tuple[tuple[str, str], ...] = ()  # environment variables of its commands
    fix: str = ""  # a known-good fix: a patch file's path (relative ones from the task's folder)


def _split(raw: str, where: str) -> tuple[str, str]:
    lines = raw.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise BadInput(f"{where}: no front matter; start the file with a line `---`, the keys "
                       "test and touch, and another `---`")
    for n, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return "".join(lines[1:n]), "".join(lines[n + 1:]).strip("\n") + "\n"
    raise BadInput(f"{where}: the front matter never ends; close it with a line `---`")


def _strings(doc: dict, key: str, where: str, problems: list[str]) -> tuple[str, ...]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        problems.append(f"{where}: {key}: give a list of non-empty strings, e.g. "
                        f"{key}: [{'pytest, -q' if key == 'test' else 'src/module.py'}]")
        return ()
    return tuple(value)


def parse_task(path: Path) -> Task:
    """Read one task file; BadInput naming the file and every problem found."""
    where = str(path)
    data = read_bounded(path, MAX_TASK_BYTES, f"{where} (a task file)")
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{where}: not UTF-8 text") from None
    head, body = _split(raw, where)
    # The one bounded YAML loader (nesting, aliases); the leading newline stands for the
    # opening `---`, so a line named is the file's.
    doc = yamlsafe.load("\n" + head, where) or {}
    if not isinstance(doc, dict):
        raise BadInput(f"{where}: the front matter must be keys and values (test, touch, ...)")
    problems = [f"{where}: unknown key {k!r}; the keys are {', '.join(sorted(KEYS))}"
                for k in sorted(map(str, doc)) if k not in KEYS]
    for key in ("test", "touch"):
        if key not in doc:
            problems.append(f"{where}: {key}: missing; every task names its guarded test "
                            "command (test) and the paths a fix may touch (touch)")
    test = _strings(doc, "test", where, problems)
    touch = _strings(doc, "touch", where, problems)
    allow = _strings(doc, "allow", where, problems)
    problems += [f"{where}: allow: {p!r} is not a program name (no paths, no spaces)"
                 for p in allow if not _PROGRAM.fullmatch(p)]
    problems += [f"{where}: touch: {p!r} must be a relative path inside the repository"
                 for p in touch if p.startswith("/") or ".." in p.split("/")]
    probe = doc.get("probe", False)
    if not isinstance(probe, bool):
        problems.append(f"{where}: probe: give true or false")
    env = doc.get("env", {})
    if not isinstance(env, dict) or not all(
            isinstance(k, str) and _VAR.fullmatch(k) and isinstance(v, str | int | float)
            and not isinstance(v, bool) and "\0" not in str(v) for k, v in env.items()):
        problems.append(f"{where}: env: give a map of variable names to strings, e.g. "
                        "env: {PYTHONPATH: /repo/src}")
        env = {}
    fix = doc.get("fix", "")
    if not isinstance(fix, str):
        problems.append(f"{where}: fix: give the path of a patch file (a unified diff)")
        fix = ""
    elif fix:
        fix = str((path.parent / fix).resolve())
        if not Path(fix).is_file():
            problems.append(f"{where}: fix: {fix} is not a file; give the path of the task's "
                            "known-good fix as a patch (git diff > fix.patch), relative to the "
                            "task's folder")
    if "PATH" in env:
        problems.append(f"{where}: env: PATH is set by the harness (--venv puts its bin/ first)")
    if not body.strip():
        problems.append(f"{where}: no task text after the front matter; say the symptom, the "
                        "expected behaviour and where to look")
    if problems:
        raise BadInput("; ".join(problems))
    name = path.name[:-3] if path.name.endswith(".md") else path.name
    return Task(name, body, test, touch, allow, bool(probe), hashlib.sha256(data).hexdigest(),
                where, tuple(sorted((k, str(v)) for k, v in env.items())), fix)


def load_tasks(folder: str) -> list[Task]:
    """Every `*.md` task in `folder`, by name; BadInput naming each broken file (all at once),
    a missing folder, or a folder without tasks."""
    root = Path(folder)
    if not root.is_dir():
        raise BadInput(f"--tasks {folder}: not a folder; give the folder of task files (*.md)")
    files = sorted(p for p in root.glob("*.md") if p.is_file() and p.name.lower() != "readme.md")
    if not files:
        raise BadInput(f"--tasks {folder}: no task files (*.md) in it")
    tasks, problems = [], []
    for path in files:
        if not _NAME.fullmatch(path.name[:-3]):
            problems.append(f"{path}: a task's file name is its name: letters, digits, '.', "
                            "'_' and '-' only")
            continue
        try:
            tasks.append(parse_task(path))
        except BadInput as e:
            problems.append(str(e))
    if problems:
        raise BadInput("; ".join(problems))
    return tasks
