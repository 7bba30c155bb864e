"""The one way the tests run `plimsoll-ci`.

`run_cli(*args)` calls `plimsoll_ci.cli.main` in this process, with stdout and stderr captured
and `cwd`/`env` applied for the call only: a call costs no interpreter start-up and no imports
the worker already made. `run_process(*args)` starts `python -m plimsoll_ci` instead, for the tests
whose subject is the process boundary (signals, a real exit status, what a child inherits, a
wall-clock bound, a hostile `.git/config` that would run code in the caller). Both return a
`Ran` with the attributes of `subprocess.CompletedProcess` the tests read.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

from plimsoll_ci import cli


class Ran(NamedTuple):
    """What a run of the CLI left: its exit code and what it printed (unpacks as a triple)."""

    returncode: int
    stdout: str
    stderr: str


class Guard(Protocol):
    """What `run_cli` and `run_process` need of a leak guard (`kit.scan.LeakGuard`)."""

    def text(self, text: str | bytes, where: str = ...) -> None: ...


def _checked(ran: Ran, guard: Guard | None) -> Ran:
    if guard is not None:
        guard.text(ran.stdout, "stdout")
        guard.text(ran.stderr, "stderr")
    return ran


@contextlib.contextmanager
def _environment(env: Mapping[str, str | None] | None) -> Iterator[None]:
    """`env` over os.environ for the block (a None value unsets the name), then as it was."""
    saved = dict(os.environ)
    try:
        for name, value in (env or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _directory(cwd: str | Path | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


def _stream() -> io.TextIOWrapper:
    # a text stream over bytes, as sys.stdout is: commands that write to `.buffer` are captured too
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]


def run_cli(*args: str | Path, cwd: str | Path | None = None,
            env: Mapping[str, str | None] | None = None, guard: Guard | None = None,
            front: str = "main") -> Ran:
    """`plimsoll-ci ARGS` in this process: (exit code, stdout, stderr) with `cwd` and `env`
    (names over os.environ; None unsets one) in force for the call only; with `guard`, both
    outputs go through the leak guard. `front` names another entry point of `plimsoll_ci.cli`
    (`withheld_main`, `eval_integrity_main`). An argparse exit (`--help`, a usage error) is its
    exit code, as the console script's would be."""
    argv = [str(a) for a in args]
    out, err = _stream(), _stream()
    with _environment(env), _directory(cwd), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = getattr(cli, front)(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
    return _checked(Ran(code, _text(out), _text(err)), guard)


def cli_argv(*args: str | Path, module: str = "plimsoll_ci") -> list[str]:
    """The argv of `python -m plimsoll_ci ARGS`, for a test that starts the process itself
    (`subprocess.Popen`) to signal it or read it while it runs."""
    return [sys.executable, "-m", module, *(str(a) for a in args)]


def run_process(*args: str | Path, cwd: str | Path | None = None,
                env: Mapping[str, str | None] | None = None, timeout: float = 600,
                module: str = "plimsoll_ci", inherit: bool = True,
                guard: Guard | None = None) -> Ran:
    """`python -m plimsoll_ci ARGS` as a real process (see the module's docstring for when),
    with `env` over this process's environment (None unsets a name), or `env` alone when not
    `inherit`; with `guard`, both outputs go through the leak guard."""
    argv = [str(a) for a in args]
    full = dict(os.environ) if inherit else {}
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    proc = subprocess.run(cli_argv(*argv, module=module), cwd=cwd, env=full,
                          capture_output=True, timeout=timeout, check=False)
    return _checked(Ran(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                        proc.stderr.decode("utf-8", "replace")), guard)
