"""Every file a withheld set, a key or a canary is built or checked from is read within a bound,
regular files only: `/dev/zero` or a FIFO given in their place is refused at once (exit 2, the
flag's file and the bound named), never read until memory runs out or waited on forever, and
nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kit.cli import run_cli


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "a-fifo"
    os.mkfifo(path)  # no writer: a plain open() waits forever
    return path


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_key_file_that_is_a_device_or_a_fifo_is_refused_and_nothing_is_written(
        tmp_path: Path, fifo: Path, special: str) -> None:
    values = tmp_path / "seeds.txt"
    values.write_text("3107713414\n")
    out = tmp_path / "withheld.json"
    key = str(fifo) if special == "fifo" else special
    ran = run_cli("withheld", "build", "--values", values, "--key-file", key, "-o", out)
    assert ran.returncode == 2, ran.stderr
    assert "key file" in ran.stderr and "Traceback" not in ran.stderr
    assert not out.exists()


@pytest.mark.parametrize("flag", ["--file", "--source"])
@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_whole_file_to_withhold_that_is_a_device_or_a_fifo_is_refused(
        tmp_path: Path, fifo: Path, special: str, flag: str) -> None:
    out = tmp_path / "withheld.json"
    path = str(fifo) if special == "fifo" else special
    ran = run_cli("withheld", "build", flag, path, "-o", out)
    assert ran.returncode == 2, ran.stderr
    assert path in ran.stderr and "Traceback" not in ran.stderr
    assert not out.exists()


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_canary_file_that_is_a_device_or_a_fifo_is_refused(tmp_path: Path, fifo: Path,
                                                             special: str) -> None:
    (tmp_path / "planted").mkdir()
    (tmp_path / "requests").mkdir()
    path = str(fifo) if special == "fifo" else special
    ran = run_cli("canary", "check", "--sealed", path, "--planted", tmp_path / "planted",
                  "--requests", tmp_path / "requests")
    assert ran.returncode == 2, ran.stderr
    assert "canary file" in ran.stderr and "Traceback" not in ran.stderr
