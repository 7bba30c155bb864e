"""One command in a sandbox over a folder (`sandbox.command`): exit codes, the timeout, the wall.

The gVisor tests are the ones that matter (they fail in CI without runsc); the same claims are
checked under docker's runsc runtime and the process provider where they hold there too.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from plimsoll_ci.errors import BadInput
from plimsoll_ci.sandbox import rootfs
from plimsoll_ci.sandbox.command import (
    NOT_FOUND_EXIT,
    TIMEOUT_EXIT,
    CommandLimits,
    open_up,
    program_inside,
    run_in_sandbox,
)

FAST = CommandLimits(timeout_s=60)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder the sandbox may write, inside the private tmp_path (as the eval harness does)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "kept.txt").write_text("kept\n")
    open_up(repo)
    return repo


def _py(code: str) -> list[str]:
    return ["python", "-c", code]


@pytest.mark.gvisor
def test_a_command_in_gvisor_gives_its_exit_code_and_output_tail(gvisor, folder):
    result = run_in_sandbox(gvisor, folder, _py("import sys; print('x' * 20000); "
                                                "print('the end'); sys.exit(3)"), FAST)
    assert result.exit_code == 3
    assert not result.timed_out
    assert result.output.endswith("the end\n")
    assert len(result.output.encode()) <= FAST.output_bytes
    assert result.output_bytes > 20000
    assert result.provider == "gvisor" and result.tier == "kernel"
    assert result.evidence["network"] == "none"


@pytest.mark.gvisor
def test_the_folder_is_read_write_and_everything_else_read_only_in_gvisor(gvisor, folder):
    code = ("import os\n"
            "open('made.txt', 'w').write('from inside')\n"
            "print('kept:', open('kept.txt').read().strip())\n"
            "for p in ('/outside.txt', '/usr/local/bin/evil', '/etc/passwd', '/dev/shm/x'):\n"
            "    try:\n"
            "        open(p, 'w').write('x')\n"
            "        print(p, 'WRITTEN')\n"
            "    except OSError as e:\n"
            "        print(p, 'refused', e.errno)\n"
            "print('cwd', os.getcwd(), 'uid', os.getuid())\n")
    result = run_in_sandbox(gvisor, folder, _py(code), FAST)
    assert result.exit_code == 0, result.output
    assert (folder / "made.txt").read_text() == "from inside"
    assert "kept: kept" in result.output
    assert "WRITTEN" not in result.output
    assert "cwd /repo uid 65534" in result.output
    assert not Path("/outside.txt").exists()


@pytest.mark.gvisor
def test_a_command_that_sleeps_is_killed_at_the_timeout_with_124(gvisor, folder):
    started = time.monotonic()
    result = run_in_sandbox(gvisor, folder, _py("import time; print('sleeping', flush=True); "
                                                "time.sleep(120)"), CommandLimits(timeout_s=3))
    took = time.monotonic() - started
    assert (result.exit_code, result.timed_out) == (TIMEOUT_EXIT, True)
    assert "sleeping" in result.output
    assert took < 20


@pytest.mark.gvisor
def test_the_network_is_not_there_inside_gvisor(gvisor, folder):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept())
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    code = ("import socket\n"
            f"for host, port in (('127.0.0.1', {port}), ('1.1.1.1', 80), ('pypi.org', 443)):\n"
            "    try:\n"
            "        socket.create_connection((host, port), timeout=3)\n"
            "        print(host, 'CONNECTED')\n"
            "    except OSError as e:\n"
            "        print(host, 'no:', type(e).__name__)\n")
    try:
        result = run_in_sandbox(gvisor, folder, _py(code), FAST)
    finally:
        stop.set()
        thread.join(2)
        listener.close()
    assert result.exit_code == 0, result.output
    assert "CONNECTED" not in result.output
    assert accepted == []


@pytest.mark.gvisor
def test_a_program_the_runtime_does_not_carry_exits_127_without_a_sandbox(gvisor, folder):
    result = run_in_sandbox(gvisor, folder, ["go", "version"], FAST)
    assert result.exit_code == NOT_FOUND_EXIT
    assert "not found" in result.output


@pytest.mark.gvisor
def test_node_and_npm_run_in_gvisor_over_the_folder(gvisor, folder):
    result = run_in_sandbox(gvisor, folder, ["node", "-e", "const fs = require('fs');\n"
                                             "console.log(fs.readFileSync('kept.txt', 'utf8'));\n"
                                             "fs.writeFileSync('made.txt', 'x');"], FAST)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("kept") and (folder / "made.txt").read_text() == "x"
    (folder / "package.json").write_text('{"name": "t", "version": "1.2.3"}\n')
    npm = run_in_sandbox(gvisor, folder, ["npm", "pkg", "get", "version"], FAST)
    assert npm.exit_code == 0, npm.output
    assert '"1.2.3"' in npm.output


@pytest.mark.gvisor
def test_pytest_runs_inside_gvisor_without_writing_caches_into_the_folder(gvisor, folder):
    (folder / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    open_up(folder)
    result = run_in_sandbox(gvisor, folder, ["pytest", "-q", "test_one.py"], FAST)
    assert result.exit_code == 0, result.output
    assert "1 passed" in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["kept.txt", "test_one.py"]


@pytest.mark.docker
def test_docker_runsc_runs_a_command_over_the_folder_with_the_same_exit_codes(docker_runsc,
                                                                              folder):
    result = run_in_sandbox(docker_runsc, folder, _py(
        "open('made.txt', 'w').write('d'); import sys; sys.exit(5)"), FAST)
    assert result.exit_code == 5, result.output
    assert (folder / "made.txt").read_text() == "d"
    slept = run_in_sandbox(docker_runsc, folder, _py("import time; time.sleep(120)"),
                           CommandLimits(timeout_s=3))
    assert (slept.exit_code, slept.timed_out) == (TIMEOUT_EXIT, True)


def test_the_process_provider_runs_a_command_and_kills_it_at_the_timeout(folder):
    result = run_in_sandbox("process", folder, _py(
        "open('made.txt', 'w').write('p'); print('ok')"), FAST)
    assert result.exit_code == 0, result.output
    assert (folder / "made.txt").read_text() == "p"
    slept = run_in_sandbox("process", folder, _py("import time; time.sleep(120)"),
                           CommandLimits(timeout_s=2))
    assert (slept.exit_code, slept.timed_out) == (TIMEOUT_EXIT, True)


@pytest.mark.parametrize("argv", [[], [""], ["python", "a\0b"]])
def test_a_malformed_argv_is_bad_input(folder, argv):
    with pytest.raises(BadInput):
        run_in_sandbox("process", folder, argv, FAST)


def test_programs_are_looked_up_on_the_runtime_s_path_only(tmp_path):
    bindir = tmp_path / rootfs.PREFIX.lstrip("/") / "bin"
    bindir.mkdir(parents=True)
    (bindir / "pytest").write_text("#!/bin/false\n")
    assert program_inside("pytest", tmp_path) == f"{rootfs.PREFIX}/bin/pytest"
    assert program_inside("curl", tmp_path) is None
    assert program_inside("/bin/rm", tmp_path) is None
    assert program_inside("./script.py", tmp_path) == "./script.py"


def test_the_runtime_carries_python_pytest_and_no_shell():
    built = rootfs.build()
    bindir = built.path / rootfs.PREFIX.lstrip("/") / "bin"
    assert os.readlink(bindir / "python") == "python3"
    assert (bindir / "pytest").read_text().startswith(f"#!{rootfs.PREFIX}/bin/python3\n")
    site = next((built.path / rootfs.PREFIX.lstrip("/") / "lib").glob("python3*/site-packages"))
    for package in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments"):
        assert (site / package).is_dir(), package
    assert not (built.path / "bin" / "sh").exists()
    assert (built.path / "repo").is_dir()  # the mount point of the folder
