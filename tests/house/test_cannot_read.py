"""A file that cannot be read is said one way everywhere (`files.cannot_read`): the system's
reason, never the error's text (which repeats the path, and a key file's path may be the key)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import cannot_read, read_bounded
from plimsoll_ci.withheld import key_from

PACKAGE = Path(__file__).resolve().parents[2] / "plimsoll_ci"


def test_no_module_writes_the_phrase_by_hand() -> None:
    """Seventeen hand-written copies had drifted ("cannot be read", "cannot read the config
    (UnicodeDecodeError)", a reason of None); every one is `files.cannot_read` now."""
    holders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
                    p in node.value for p in (": cannot read (", ": cannot be read (",
                                              "cannot read the ", "cannot read a ")):
                holders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert holders == [], "say it with files.cannot_read(e)"


@pytest.mark.parametrize("error, said", [
    (PermissionError(13, "Permission denied", "/secret/path"), "cannot read (Permission denied)"),
    (OSError("no reason given"), "cannot read (OSError)"),
    (UnicodeDecodeError("utf-8", b"ab\xff", 2, 3, "invalid start byte"),
     "cannot read (not UTF-8 at byte 2)"),
])
def test_cannot_read_gives_the_reason_never_the_path(error: BaseException, said: str) -> None:
    assert cannot_read(error) == said


def test_a_key_file_that_cannot_be_read_is_named_with_the_reason_only(tmp_path: Path) -> None:
    # (a folder is not a regular file: the bounded read says so, as for /dev/zero or a FIFO)
    with pytest.raises(BadInput, match=r"^key file .*: not a regular file \(a device, FIFO or "
                                       r"socket is never read\); give a file$"):
        key_from(None, str(tmp_path))
    with pytest.raises(BadInput, match=r"missing: cannot read \(No such file or directory\)$"):
        read_bounded(tmp_path / "missing", 100)
