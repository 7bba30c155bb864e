"""`run_code`: a rebuild's Python or JavaScript, run in a sandbox of its own over a copy of its
workspace.

    ran = run_code(files, "print(1 + 1)", Bounds(), provider="gvisor")
    ran.status, ran.exit_code, ran.output        # "ok", 0, "2\\n"

The workspace's files (and any kit the harness ships beside them) are staged read-only; the
sandbox's runner copies them into its private `/tmp`, changes there and runs the code with stdout
and stderr on one channel (JavaScript: written there as `.run_code.mjs` and run by the runtime's
node as a child of the runner). The provider is one of `sandbox.all_providers` (gVisor by default: no
network, read-only root, memory and process limits), the CPU time is read from outside and bounded,
and so is the wall clock; only the last `Bounds.output_bytes` of the output come back.

This sits on the provider/stage API of `plimsoll_ci.sandbox` directly; a generic "run one command
in a sandbox over a folder" module there could take it over (the runner script and `_read_all`).
"""

from __future__ import annotations

import json
import secrets
import select
import shutil
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import SandboxError
from plimsoll_ci.sandbox import all_providers
from plimsoll_ci.sandbox.session import Limits
from plimsoll_ci.sandbox.stage import Stage

MAX_CODE_BYTES = 256 * 1024

# Runs inside the sandbox with the standard library only. It is as untrusted as the code it runs.
RUNNER = r'''
import json, os, shutil, sys, tempfile, traceback
msg = json.loads(sys.stdin.readline())
os.dup2(1, 2)
work = tempfile.mkdtemp(prefix="work-")
shutil.copytree(msg["workspace"], work, dirs_exist_ok=True)
os.chdir(work)
sys.path.insert(0, work)
sys.stdin = open(os.devnull)
code = 0
if msg.get("language") == "javascript":
    import subprocess
    node = os.path.join(sys.prefix, "bin", "node")
    node = node if os.access(node, os.X_OK) else shutil.which("node")
    script = os.path.join(work, ".run_code.mjs")
    with open(script, "w") as fh:
        fh.write(msg["code"])
    if node is None:
        print("node is not in this sandbox's runtime")
        code = 127
    else:
        sys.stdout.flush()
        code = subprocess.run([node, script], stdin=subprocess.DEVNULL).returncode
        code = code if code >= 0 else 128 - code
else:
    try:
        exec(compile(msg["code"], "run_code.py", "exec"), {"__name__": "__main__"})
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
sys.stdout.flush()
sys.stderr.flush()
os.write(1, ("\n%s exit %d\n" % (msg["nonce"], code)).encode())
'''


class Bounds(NamedTuple):
    """What one run_code call may use."""

    cpu_s: float = 20.0
    wall_s: float = 60.0
    output_bytes: int = 4000
    limits: Limits = Limits(memory_bytes=512 * 1024 * 1024, pids=64)


class CodeRun(NamedTuple):
    """How a run_code call ended."""

    status: str  # "ok" | "cpu" | "wall"
    exit_code: int | None  # None when it was cut off
    output: str  # the tail of stdout and stderr
    provider: str

    def text(self) -> str:
        """What the model is told."""
        head = {"ok": f"exit code {self.exit_code}",
                "cpu": "stopped: over its CPU time bound",
                "wall": "stopped: over its wall-clock bound"}[self.status]
        return f"{head}\n--- output (last part) ---\n{self.output}" if self.output else head


def _stage(files: dict[str, bytes]) -> Stage:
    root = Path(tempfile.mkdtemp(prefix="plimsoll-run-code-"))
    root.chmod(0o755)
    code, runner = root / "controller", root / "runner"
    code.mkdir(mode=0o755)
    runner.mkdir(mode=0o755)
    for rel, data in files.items():
        dest = code / rel
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        dest.write_bytes(data)
        dest.chmod(0o644)
    for d in [p for p in code.rglob("*") if p.is_dir()]:
        d.chmod(0o755)
    (runner / "runner.py").write_text(RUNNER)
    (runner / "runner.py").chmod(0o644)
    canary = root / f"canary-{secrets.token_hex(8)}"
    canary.write_text("plimsoll host canary\n")
    return Stage(root, code, runner, canary, "controller", {})


LANGUAGES = ("python", "javascript")


def run_code(files: dict[str, bytes], code: str, bounds: Bounds, provider: str,
             language: str = "python") -> CodeRun:
    """Run `code` (Python, or JavaScript as an ES module) over a copy of `files` in a fresh
    sandbox of `provider` (SandboxError when none can start)."""
    chosen = all_providers.get(provider)
    st = _stage(files)
    nonce = secrets.token_hex(8)
    try:
        for _attempt in range(2):
            session = chosen.start(st, bounds.limits)
            try:
                message = {"workspace": session.code_path, "code": code, "nonce": nonce,
                           "language": language}
                session.send(json.dumps(message).encode() + b"\n", bounds.wall_s)
                status, out = _read_all(session, bounds)
                stderr = session.stderr_text()
            finally:
                session.close()
            marker = f"\n{nonce} exit ".encode()
            at = out.rfind(marker)
            if at < 0 and not out and chosen.retry_start(stderr):
                continue  # the provider changed how it starts (gVisor without cgroups)
            if at < 0 and status == "ok" and not out and stderr.strip():
                raise SandboxError(f"provider {provider}: the run_code sandbox did not start "
                                   f"({stderr.strip().splitlines()[-1][:200]})")
            exit_code = None
            if at >= 0:
                tail = out[at + len(marker):].split(b"\n", 1)[0]
                exit_code = int(tail) if tail.strip().lstrip(b"-").isdigit() else 1
                out = out[:at]
            elif status == "ok":
                exit_code = 1  # it ended without the runner's last line: killed or crashed
            shown = out[-bounds.output_bytes:].decode("utf-8", "replace")
            return CodeRun(status, exit_code, shown, provider)
        raise SandboxError(f"provider {provider}: the run_code sandbox did not start")
    finally:
        shutil.rmtree(st.root, ignore_errors=True)


def _read_all(session, bounds: Bounds) -> tuple[str, bytes]:
    """Everything the sandbox writes until it ends, keeping a bounded tail; or why it was cut."""
    keep = max(bounds.output_bytes * 2, 65536)
    stream = session.stream
    t0 = time.monotonic()
    while not stream.eof:
        ready, _, _ = select.select([stream.fd], [], [], 0.05)
        if ready:
            stream.read_some()
            if len(stream.buf) > keep:
                del stream.buf[:len(stream.buf) - keep]
        if session.cpu() > bounds.cpu_s:
            return "cpu", bytes(stream.buf)
        if time.monotonic() - t0 > bounds.wall_s:
            return "wall", bytes(stream.buf)
    return "ok", bytes(stream.buf)
