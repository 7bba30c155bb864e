"""A rebuild's workspace: the files its model wrote with `write_file`, and nothing else.

Paths are relative, `/`-separated, made of plain names (letters, digits, `.`, `_`, `-`), never
`..`, never absolute, never hidden; files and the whole workspace are size-bounded. A refused write
is an error result for the model (the session goes on), never an exception for the harness.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

MAX_FILE_BYTES = 256 * 1024
MAX_FILES = 64
MAX_TOTAL_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 4
CONTROLLER = "controller.py"
JS_CONTROLLERS = ("controller.mjs", "controller.js")
_PART = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


class Refused(Exception):
    """A tool call the workspace will not carry out; the message goes back to the model."""


def check_path(path: object) -> str:
    """The normalised relative path, or Refused saying what a path must be."""
    if not isinstance(path, str) or not path:
        raise Refused("path must be a non-empty string such as controller.py")
    if path.startswith("/") or "\\" in path:
        raise Refused(f"path {path[:80]!r}: give a path relative to the workspace, with / between "
                      "folders (no absolute paths)")
    parts = path.split("/")
    if ".." in parts:
        raise Refused(f"path {path[:80]!r}: .. is not allowed; stay inside the workspace")
    parts = [p for p in parts if p not in ("", ".")]
    if not parts or len(parts) > MAX_DEPTH or not all(_PART.fullmatch(p) for p in parts):
        raise Refused(f"path {path[:80]!r}: use at most {MAX_DEPTH} plain names (letters, digits, "
                      ". _ -, not starting with .) separated by /")
    return "/".join(parts)


class Workspace:
    """The files of one rebuild, in a private folder on the trusted side."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, bytes] = {}

    def write(self, path: object, content: object) -> str:
        """Write one file; the result text for the model, or Refused."""
        rel = check_path(path)
        if not isinstance(content, str):
            raise Refused("content must be a string (the file's text)")
        data = content.encode("utf-8", "replace")
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"{rel}: {len(data)} bytes; a file may hold at most {MAX_FILE_BYTES}")
        if rel not in self._files and len(self._files) >= MAX_FILES:
            raise Refused(f"the workspace already holds {MAX_FILES} files; overwrite one instead")
        if any(other.startswith(rel + "/") for other in self._files) or \
                any(rel.startswith(other + "/") for other in self._files):
            raise Refused(f"{rel}: a file and a folder cannot share a name")
        total = sum(len(v) for k, v in self._files.items() if k != rel) + len(data)
        if total > MAX_TOTAL_BYTES:
            raise Refused(f"the workspace would hold {total} bytes; at most {MAX_TOTAL_BYTES}")
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self._files[rel] = data
        return f"wrote {rel} ({len(data)} bytes)"

    def files(self) -> dict[str, bytes]:
        """Every file written, by path (sorted)."""
        return dict(sorted(self._files.items()))

    def has_controller(self) -> bool:
        """True when the model wrote `controller.py` (or, in JavaScript, `controller.mjs` or
        `controller.js`: the grading picks the runtime from the extension)."""
        return any(name in self._files for name in (CONTROLLER, *JS_CONTROLLERS))


def files_digest(files: dict[str, bytes]) -> str:
    """SHA-256 naming a set of files: over `path NUL sha256 NL` lines, sorted by path."""
    h = hashlib.sha256(b"plimsoll-ci workspace v1\x00")
    for path, data in sorted(files.items()):
        h.update(path.encode() + b"\x00" + hashlib.sha256(data).hexdigest().encode() + b"\n")
    return h.hexdigest()
