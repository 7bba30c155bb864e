"""files.py: every read bounded, every path kept inside the folder it was given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import inside, read_bounded


def test_read_bounded_reads_a_file_within_its_bound(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_bytes(b"x" * 100)
    assert read_bounded(f, 100) == b"x" * 100


def test_read_bounded_refuses_a_file_over_its_bound_naming_file_and_bound(tmp_path: Path) -> None:
    f = tmp_path / "big.jsonl"
    f.write_bytes(b"x" * 2049)
    with pytest.raises(BadInput, match=r"big\.jsonl: 2049 bytes, over the bound of 2 KiB"):
        read_bounded(f, 2048)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_read_bounded_never_reads_a_device(device: str) -> None:
    with pytest.raises(BadInput, match="not a regular file"):
        read_bounded(device, 1024)


def test_read_bounded_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="not a regular file"):
        read_bounded(fifo, 1024)


def test_read_bounded_without_follow_refuses_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_bounded(tmp_path / "link", 10) == b"x"
    with pytest.raises(BadInput, match="symbolic link"):
        read_bounded(tmp_path / "link", 10, follow=False)


def test_read_bounded_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="nope.json: cannot read"):
        read_bounded(tmp_path / "nope.json", 10)


def test_inside_keeps_a_path_and_a_link_that_stay_in_the_folder(tmp_path: Path) -> None:
    (tmp_path / "loops").mkdir()
    (tmp_path / "loops" / "a.py").write_text("")
    (tmp_path / "alias.py").symlink_to("loops/a.py")
    assert inside(tmp_path, "loops/a.py", "loop") == (tmp_path / "loops/a.py").resolve()
    assert inside(tmp_path, "alias.py", "loop") == (tmp_path / "loops/a.py").resolve()


@pytest.mark.parametrize("how", ["file link", "folder link", "dotdot", "absolute"])
def test_inside_refuses_a_path_leading_out_of_the_folder(tmp_path: Path, how: str) -> None:
    job = tmp_path / "job"
    job.mkdir()
    secret = tmp_path / "host"
    secret.mkdir()
    (secret / "passwd").write_text("root")
    if how == "file link":
        (job / "recipe.txt").symlink_to(secret / "passwd")
        rel = "recipe.txt"
    elif how == "folder link":
        (job / "loops").symlink_to(secret)
        rel = "loops/passwd"
    elif how == "dotdot":
        rel = "../host/passwd"
    else:
        rel = str(secret / "passwd")
    with pytest.raises(BadInput, match="leads outside"):
        inside(job, rel, "recipe")


def test_inside_refuses_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        inside(tmp_path, "missing.py", "controller")
