"""What the sandbox tests share: leftovers of gradings, the grade CLI in the background.

`leftovers(tmp)` lists what gradings that staged under `tmp` left on this machine: folders in it,
host processes whose command line names it (runsc's sandbox and gofer, a process provider's
runner) and docker containers whose stage label lies in it.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from kit.cli import cli_argv

SLEEPER = """
import time

class Controller:
    def __init__(self, info):
        pass

    def step(self, obs):
        time.sleep(3600)
"""


def leftovers(tmp: Path) -> list[str]:
    """Folders, host processes and containers of gradings that staged under `tmp`."""
    found = [f"folder {p.name}" for p in tmp.iterdir()]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(tmp).encode() in cmdline:
            shown = cmdline.replace(b"\0", b" ")[:120]
            found.append(f"process {pid}: {shown!r}")
    try:
        import docker

        client = docker.from_env(timeout=30)
        for c in client.containers.list(all=True, filters={"label": "plimsoll-ci.stage"}):
            if c.labels.get("plimsoll-ci.stage", "").startswith(str(tmp)):
                found.append(f"container {c.id[:12]} ({c.status})")
    except Exception:  # noqa: BLE001 - no dockerd here: no container either
        pass
    return found


def no_leftovers(tmp: Path, within: float = 20.0) -> None:
    """Assert that nothing of `tmp`'s gradings is left (a killed sandbox takes a moment to go)."""
    deadline = time.monotonic() + within
    while leftovers(tmp) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftovers(tmp) == []


def grade_cli(controller: Path, provider: str, flights: int, *extra: str,
              env: dict[str, str] | None = None) -> subprocess.Popen:
    """`plimsoll-ci grade` on `flights` easy seeds, started in the background."""
    return subprocess.Popen(
        [*cli_argv(), "grade", "--controller", str(controller),
         "--course", "easy", "--seeds", f"5000000001-{5000000000 + flights}",
         "--provider", provider, "--format", "json", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for_sandbox(proc: subprocess.Popen, tmp: Path, within: float = 120.0,
                     settle: float = 1.0) -> None:
    """Wait until the grading's sandbox runs (a process or container of it, not just its folder),
    then `settle` seconds more, so the runner is inside the controller's step. A test whose
    claim needs the sandbox to outlive a SIGKILL of its grader gives more: killed while the
    sandbox still starts, the runner reads the closed pipe and ends by itself (seen once in four
    suites at three workers on two cores, a docker sandbox gone after 1 s)."""
    deadline = time.monotonic() + within
    while not [x for x in leftovers(tmp) if not x.startswith("folder")]:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sandbox never started"
        time.sleep(0.2)
    time.sleep(settle)
