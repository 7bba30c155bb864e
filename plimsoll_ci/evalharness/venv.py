"""The repository's own environment in the sandbox: `eval run --venv PATH`.

    view = venv_view("/home/me/requests/.venv")      # View: what every command sees
    view = task_view(view, task, snapshot)           # + the copy's package, the task's env

A virtual environment is mounted read-only at its own path (so its scripts' `#!` lines and its
`bin/python` link hold), and so is its base interpreter's prefix (the interpreter, its standard
library and shared library), found from `pyvenv.cfg`. A folder without `pyvenv.cfg` is taken as an
interpreter prefix (`bin/python3`, `lib/`) and mounted alone. Its `bin/` comes first on PATH.

The tests import the copy's package, never an installed copy of the original: `PYTHONPATH` starts
with `/repo/src` (a `src/` layout) and `/repo`, and nothing of the host but these folders is
mounted, so an editable install pointing at the original repository finds nothing there.
"""

from __future__ import annotations

import os
from pathlib import Path

from plimsoll_ci.errors import BadInput
from plimsoll_ci.evalharness.snapshot import Snapshot
from plimsoll_ci.evalharness.tasks import Task
from plimsoll_ci.sandbox.command import WORKDIR, View

_TOO_WIDE = ("/", "/usr", "/usr/local", "/bin", "/etc", "/home", "/root", "/opt", "/tmp")


def _config(venv: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        text = (venv / "pyvenv.cfg").read_text("utf-8", "replace")[:64 * 1024]
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def venv_view(path: str) -> View:
    """What `--venv PATH` mounts; BadInput when it is not a virtual environment or an interpreter
    prefix with a `bin/` folder."""
    venv = Path(path).resolve()
    if not (venv / "bin").is_dir():
        raise BadInput(f"--venv {path}: no bin/ folder; give a virtual environment (python3 -m "
                       "venv PATH; pip install the repository's dependencies and its test "
                       "runner into it) or an interpreter prefix")
    ro = [str(venv)]
    cfg = _config(venv)
    if "home" in cfg:
        home = Path(cfg["home"]).resolve()
        base = home.parent if home.name == "bin" else home
        version = ".".join(cfg.get("version", cfg.get("version_info", "")).split(".")[:2])
        if str(base) in _TOO_WIDE:
            # a system interpreter: its bin/ and standard library only, never all of /usr
            ro += [str(home)] + ([str(base / "lib" / f"python{version}")] if version else [])
        else:
            ro.append(str(base))
    ro = [p for p in dict.fromkeys(ro) if os.path.isdir(p)]
    if str(venv) in _TOO_WIDE:
        raise BadInput(f"--venv {path}: a system folder; give a virtual environment")
    return View(ro=tuple(ro), path=(f"{venv}/bin",))


def _package_roots(snapshot: Snapshot) -> list[str]:
    """/repo/src when the copy has a `src/` layout (a package or module under src/), and /repo."""
    src = any(f.path.startswith("src/") and f.path.endswith(".py") for f in snapshot.files)
    return ([f"{WORKDIR}/src"] if src else []) + [WORKDIR]


def task_view(base: View, task: Task, snapshot: Snapshot) -> View:
    """`base` with the copy's package first on PYTHONPATH and the task's `env:`; a task's own
    PYTHONPATH comes before the copy's roots."""
    env = dict(base.env)
    env.update(task.env)
    roots = _package_roots(snapshot)
    env["PYTHONPATH"] = ":".join(x for x in (dict(task.env).get("PYTHONPATH", ""), *roots) if x)
    return base._replace(env=tuple(sorted(env.items())))
