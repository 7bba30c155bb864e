"""A reader that goes away early (`plimsoll-ci ... | head`) ends the program quietly, as git and
pip do: no traceback, exit 141 (128 + SIGPIPE), whatever the command was printing; and each
compatible front's `--help` is its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARGON = REPO / "examples" / "argon"
KEY = "argon-example-key-published-in-the-demo-not-a-secret"


def _into_closed_pipe(args: list[str], tmp_path: Path, front: str = "program"
                      ) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with stdout a pipe whose reader has already gone (what `| head` leaves once
    it has its lines): the first write meets EPIPE."""
    read, write = os.pipe()
    os.close(read)
    code = f"from plimsoll_ci.cli import {front}; raise SystemExit({front}())"
    try:
        return subprocess.run([sys.executable, "-c", code, *args], stdout=write,
                              stderr=subprocess.PIPE, cwd=tmp_path, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO), "ARGON_KEY": KEY})
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [
    ["withheld", "info", "--format", "json", str(ARGON / "withheld.json")],
    ["scan", "--withheld", str(ARGON / "withheld.json"), "--key-env", "ARGON_KEY", str(ARGON)],
    ["scan", "--withheld", str(ARGON / "withheld.json"), "--key-env", "ARGON_KEY",
     "--format", "sarif", str(ARGON)],
    ["ship", "list", "--config", str(ARGON / "plimsoll.yaml")],
    ["withheld", "info", str(ARGON / "withheld.json")],
    ["--help"],
], ids=lambda a: " ".join(a[:2]))
def test_a_reader_that_goes_away_ends_the_program_quietly(args: list[str],
                                                          tmp_path: Path) -> None:
    proc = _into_closed_pipe(args, tmp_path)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception" not in err, err
    assert proc.returncode in (0, 141), err  # --help: argparse itself ignores the failed write


def test_a_broken_pipe_exits_141_like_git() -> None:
    from plimsoll_ci import cli

    assert cli.BROKEN_PIPE == 128 + 13


def test_the_compatible_fronts_too_end_quietly(tmp_path: Path) -> None:
    proc = _into_closed_pipe(["build", "--values", str(tmp_path / "v.txt")], tmp_path,
                             front="withheld_main")
    assert "Traceback" not in proc.stderr.decode()
    (tmp_path / "v.txt").write_text("a-long-enough-value-12345\n")
    proc = _into_closed_pipe(["build", "--values", str(tmp_path / "v.txt")], tmp_path,
                             front="withheld_main")
    assert proc.returncode == 141 and "Traceback" not in proc.stderr.decode()


def _front(front: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = f"from plimsoll_ci.cli import {front}; raise SystemExit({front}())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_eval_integrity_help_is_its_own_not_the_whole_of_plimsoll_ci() -> None:
    p = _front("eval_integrity_main", "--help")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: plimsoll-eval-integrity canary make|check")
    for other in ("squeeze", "history", "keygen", "tripwire"):
        assert other not in p.stdout, other
    p = _front("eval_integrity_main", "canary", "make", "--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: plimsoll-eval-integrity canary make")


def test_eval_integrity_refuses_another_command_with_its_usage() -> None:
    p = _front("eval_integrity_main", "squeeze", "run")
    assert p.returncode == 2 and "usage: plimsoll-eval-integrity canary" in p.stderr
    p = _front("eval_integrity_main")
    assert p.returncode == 2 and "usage: plimsoll-eval-integrity canary" in p.stderr


def test_plimsoll_withheld_help_exits_0_with_its_usage() -> None:
    p = _front("withheld_main", "--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: plimsoll-withheld build|scan")
