"""Staging: the one copy of a controller's files that is scanned, digested and mounted.

The controller is copied once into a private folder; the ship scan reads that copy, the run record
digests that copy, and the sandbox mounts that copy read-only, so what was checked is exactly what
runs (no swap between the scan and the start). Only regular files are copied; symbolic links (the
controller's own path among them), devices and oversized trees are refused with a message naming
the path. The folder is named by its owner (`owner.tempdir`): if this process is killed, the next
run reaps it (`leftovers`).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import threading
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import read_bounded
from plimsoll_ci.sandbox import leftovers, owner

MAX_FILES = 2000
MAX_BYTES = 64 * 1024 * 1024
_SKIP_DIRS = {"__pycache__", ".git"}
_STAGED: set[Path] = set()  # work folders of this process not yet removed (see cleanup_all)
_STAGED_LOCK = threading.Lock()


class Stage(NamedTuple):
    """A staged controller: folders to mount, the module to import, and what was copied."""

    root: Path  # private work folder (removed by `cleanup`)
    controller: Path  # the copied controller files (mounted read-only at /controller)
    runner: Path  # folder holding only runner.py (mounted read-only at /plimsoll)
    canary: Path  # a host file no sandbox must be able to read
    module: str  # the module to import inside
    files: dict[str, str]  # relative path -> SHA-256 hex of the staged bytes
    runtime: str = "python"  # "python" (module imported by runner.py) or "node" (file, runner.mjs)


JS_SUFFIXES = (".mjs", ".js")


def runtime_of(path: str) -> str:
    """The runtime a controller file's extension picks: node for .mjs and .js, else python."""
    return "node" if path.endswith(JS_SUFFIXES) else "python"


def _module_name(name: str, where: str) -> str:
    if not name.isidentifier():
        raise BadInput(f"controller {where}: {name!r} is not an importable module name; "
                       "rename the file (letters, digits, underscores)")
    return name


def stage(controller: str, entry: str = "controller") -> Stage:
    """Copy a controller (one .py, .mjs or .js file, or a folder with ENTRY.py, ENTRY.mjs or
    ENTRY.js) into a fresh private folder; the extension picks the runtime."""
    src = Path(controller)
    if src.is_symlink():
        # The path given is the controller's root: a link would stage (and sign) whatever it
        # points to, a folder outside the one named included.
        raise BadInput(f"controller {controller}: is a symbolic link; give the file or folder "
                       "itself (links are never followed into a sandbox)")
    if not src.exists():
        raise BadInput(f"controller {controller}: no such file or folder")
    runtime = "python"
    if src.is_file():
        if src.suffix not in (".py", *JS_SUFFIXES):
            raise BadInput(f"controller {controller}: expected a .py, .mjs or .js file or a "
                           "folder")
        module = _module_name(src.stem, controller)
        runtime = runtime_of(src.name)
        if runtime == "node":
            module = src.name  # node imports the file itself
        items = [(src.name, src)]
    elif src.is_dir():
        module = _module_name(entry, controller)
        js = [f"{entry}{ext}" for ext in JS_SUFFIXES if (src / f"{entry}{ext}").is_file()]
        if (src / f"{entry}.py").is_file() or (src / entry / "__init__.py").is_file():
            pass
        elif js:
            runtime, module = "node", js[0]
        else:
            raise BadInput(f"controller {controller}: no {entry}.py, {entry}.mjs or {entry}.js "
                           "in the folder; add it or name the entry module with --entry")
        items = list(_walk(src, controller))
    else:
        raise BadInput(f"controller {controller}: not a regular file or folder")
    if len(items) > MAX_FILES:
        raise BadInput(f"controller {controller}: {len(items)} files, more than {MAX_FILES}")
    leftovers.reap_once()  # the start of a run: what killed runs left behind goes first
    # Named by this process, so a later run can reap it; recorded before a stop can come.
    root = owner.tempdir("grade", keep=_keep)
    try:
        root.chmod(0o755)
        code = root / "controller"
        runner = root / "runner"
        code.mkdir(mode=0o755)
        runner.mkdir(mode=0o755)
        total = 0
        files: dict[str, str] = {}
        for rel, path in items:
            # bounded by what is left of the tree's bound: a huge file is refused, not read
            data = read_bounded(path, max(MAX_BYTES - total, 0),
                                f"controller {controller}: {rel} (the files together)")
            total += len(data)
            if total > MAX_BYTES:
                raise BadInput(f"controller {controller}: more than {MAX_BYTES} bytes of files")
            dest = code / rel
            dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            dest.write_bytes(data)
            dest.chmod(0o644)
            files[rel] = hashlib.sha256(data).hexdigest()
        for d, _, _ in os.walk(code):
            os.chmod(d, 0o755)
        for name in ("runner.py", "runner.mjs"):  # runner.py hands a .mjs/.js to runner.mjs
            shutil.copyfile(Path(__file__).with_name(name), runner / name)
            (runner / name).chmod(0o644)
        canary = root / f"canary-{secrets.token_hex(8)}"
        canary.write_text(f"plimsoll host canary {secrets.token_hex(16)}\n")
        canary.chmod(0o644)  # readable by anyone on the host: only a wall keeps a sandbox out
        return Stage(root, code, runner, canary, module, files, runtime)
    except BaseException:
        _remove(root)
        raise


def _walk(src: Path, shown: str):
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for d in dirnames:
            if os.path.islink(os.path.join(dirpath, d)):
                raise BadInput(f"controller {shown}: {os.path.join(dirpath, d)} is a symbolic "
                               "link; copy the files it points to instead")
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(src).as_posix()
            if full.is_symlink() or not full.is_file():
                raise BadInput(f"controller {shown}: {rel} is not a regular file (symbolic link "
                               "or device); only regular files enter a sandbox")
            yield rel, full


def _keep(root: Path) -> None:
    with _STAGED_LOCK:
        _STAGED.add(root)


def _remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    with _STAGED_LOCK:
        _STAGED.discard(root)


def cleanup(st: Stage) -> None:
    """Remove the staged copy and everything a provider left in the work folder."""
    _remove(st.root)


def cleanup_all() -> int:
    """Remove every work folder this process staged and has not removed (an interrupted run's
    last step, after its sandboxes were stopped); how many there were."""
    with _STAGED_LOCK:
        left = list(_STAGED)
    for root in left:
        _remove(root)
    # and a folder made but not yet recorded when the stop came (see `owner.tempdir`)
    return len(left) + owner.sweep("grade")
