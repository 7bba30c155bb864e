"""One command in a fresh sandbox over one folder: exit code, timeout, output tail.

    from plimsoll_ci.sandbox.command import CommandLimits, run_in_sandbox

    result = run_in_sandbox("gvisor", Path("copy"), ["pytest", "-q"], CommandLimits(timeout_s=120))
    result.exit_code      # the command's own; 124 when killed at the timeout, 127 when the program
                          # is not in the sandbox's runtime
    result.output         # the last `output_bytes` of stdout and stderr, interleaved, as text

The folder is mounted read-write at `/repo`, the working directory; everything else the command
sees is the minimal runtime (`rootfs.py`: Python, pytest, no shell) read-only, a small `/tmp`, and
no network but its own loopback. It runs as `nobody` (uid 65534) with no capabilities, under
memory, pids and CPU limits, and is killed, sandbox and all, at the wall-clock timeout. The folder
must be writable by that user (`open_up` makes a folder so). The provider is named from the one
table (`all_providers.PROVIDERS`) and never falls back to another: `gvisor` runs `runsc run` on
an OCI bundle, `docker` a container under the `runsc` runtime, `process` bubblewrap (or, without
it, a plain child process on the host's file system, which the evidence says).

This is the eval harness's capability; gradings speak the runner protocol instead
(`startup.open_sandbox`), and nothing here changes that path.

    python3 -m plimsoll_ci.sandbox.command smoke [PROVIDER ...]   # pytest --version in each
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput, SandboxError
from plimsoll_ci.sandbox import all_providers, leftovers, rootfs
from plimsoll_ci.sandbox import cpu as cpumod
from plimsoll_ci.sandbox.session import Tail, drain

TIMEOUT_EXIT = 124  # as coreutils' timeout(1)
NOT_FOUND_EXIT = 127  # as a shell says for a program it cannot find
WORKDIR = "/repo"
NOBODY = 65534
ENV = {
    "PATH": f"{rootfs.PREFIX}/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider",
    "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
}  # no bytecode or pytest cache is written into the folder: only what the command meant to write


class CommandLimits(NamedTuple):
    """What one command may use."""

    timeout_s: float = 120.0  # wall clock, start-up of the sandbox included
    memory_bytes: int = 1024 * 1024 * 1024
    pids: int = 128
    cpus: float = 1.0
    tmpfs_bytes: int = 64 * 1024 * 1024
    output_bytes: int = 8192  # the tail kept of stdout and stderr
    view: View | None = None  # set by run_in_sandbox from its `view` argument


class View(NamedTuple):
    """What a command sees beyond the minimal runtime (the eval harness's `--venv`): host folders
    read-only at their own paths, folders put first on PATH, and extra environment variables."""

    ro: tuple[str, ...] = ()  # absolute host folders, each mounted read-only at the same path
    path: tuple[str, ...] = ()  # when given, the PATH instead of the runtime's bin (inside `ro`)
    env: tuple[tuple[str, str], ...] = ()

    def environment(self) -> dict[str, str]:
        """The command's environment: the sandbox's own, then these variables and PATH."""
        env = {**ENV, **dict(self.env)}
        # a view's own bin/ replaces the runtime's: a `pytest` missing from a --venv is missing,
        # never the runtime's pytest under an interpreter without the repository's dependencies
        env["PATH"] = ":".join(self.path) if self.path else ENV["PATH"]
        return env


class CommandResult(NamedTuple):
    """How one command in a sandbox ended."""

    argv: tuple[str, ...]
    exit_code: int  # 124 timed out, 127 program not found, 128+N killed by signal N
    timed_out: bool
    output: str  # the tail of stdout and stderr, interleaved, undecodable bytes replaced
    output_bytes: int  # everything the command wrote (the tail is the last part of it)
    seconds: float
    provider: str
    tier: str  # the provider's configured tier (no start-up checks run per command)
    evidence: dict


class _Started(NamedTuple):
    """A command running in some provider's sandbox: how to wait for it and how to stop it."""

    wait: Callable[[float], int | None]  # exit code, or None when still running after S seconds
    kill: Callable[[], None]  # stop the sandbox and everything in it (repeatable)
    tail: Tail
    evidence: dict


def open_up(folder: Path) -> None:
    """Make `folder` and everything in it writable by the sandbox's user (folders 0777, files
    0666, executables 0777); symbolic links are left as they are. Keep such a folder inside a
    private (0700) one on the host."""
    for dirpath, dirnames, filenames in os.walk(folder):
        os.chmod(dirpath, 0o777)
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if not os.path.islink(path):
                os.chmod(path, 0o777 if st.st_mode & 0o100 else 0o666)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]


def program_inside(argv0: str, runtime: Path, view: View | None = None) -> str | None:
    """Where `argv0` is inside a sandbox whose root is `runtime` (a path, or a name looked up on
    the sandbox's PATH: the view's folders, which are at the same paths on the host, first);
    None when it is not there."""
    if "/" in argv0:
        target = runtime / argv0.lstrip("/") if argv0.startswith("/") else None
        return argv0 if target is None or os.path.lexists(target) else None
    if view is not None and view.path:
        for folder in view.path:
            if os.path.lexists(os.path.join(folder, argv0)):
                return f"{folder}/{argv0}"
        return None
    candidate = runtime / rootfs.PREFIX.lstrip("/") / "bin" / argv0
    return f"{rootfs.PREFIX}/bin/{argv0}" if os.path.lexists(candidate) else None


def run_in_sandbox(provider: str, folder: Path, argv: Sequence[str],
                   limits: CommandLimits | None = None, view: View | None = None) -> CommandResult:
    """Run `argv` in a fresh sandbox of `provider` over `folder` (read-write at /repo), with
    `view`'s folders read-only and its environment.

    Raises SandboxError when the provider cannot start here; never raises because of what the
    command did."""
    limits = limits or CommandLimits()
    argv = tuple(argv)
    if not argv or not argv[0] or any(not isinstance(a, str) or "\0" in a for a in argv):
        raise BadInput("a sandboxed command needs a program and string arguments without NUL")
    chosen = all_providers.get(provider)
    ok, why = chosen.available()
    if not ok:
        raise SandboxError(f"provider {provider}: {why}")
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise BadInput(f"sandbox folder {folder}: not a folder")
    tier = chosen.configured_tier()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="plimsoll-cmd-"))
    run: _Started | CommandResult | None = None
    try:
        run = _RUNNERS[provider](folder, argv, limits._replace(view=view), work)
        if isinstance(run, CommandResult):  # the program is not there: nothing was started
            return run._replace(provider=provider, tier=tier, seconds=time.monotonic() - started)
        code = run.wait(max(0.0, limits.timeout_s - (time.monotonic() - started)))
        timed_out = code is None
        run.kill()
        if timed_out:
            code = TIMEOUT_EXIT
        assert code is not None
        return CommandResult(argv, code, timed_out, run.tail.text(settle=2.0), run.tail.total,
                             round(time.monotonic() - started, 3), provider, tier, run.evidence)
    finally:
        if run is not None and not isinstance(run, CommandResult):
            run.kill()
        shutil.rmtree(work, ignore_errors=True)


def _not_found(argv: tuple[str, ...], evidence: dict) -> CommandResult:
    return CommandResult(argv, NOT_FOUND_EXIT, False,
                         f"{argv[0]}: not found in the sandbox's runtime (it carries Python, "
                         "pytest, and node and npm when the host has them)\n", 0, 0.0, "", "", evidence)


def _popen(argv: list[str], preexec: Callable[[], None] | None = None, cwd: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, close_fds=True, start_new_session=True,
                            preexec_fn=preexec, cwd=cwd, env=env)


def _waiter(proc: subprocess.Popen) -> Callable[[float], int | None]:
    def wait(seconds: float) -> int | None:
        try:
            code = proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return None
        return 128 - code if code < 0 else code

    return wait


def _group_killer(proc: subprocess.Popen, then: Callable[[], None] = lambda: None
                  ) -> Callable[[], None]:
    def kill() -> None:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        then()

    return kill


def _piped(proc: subprocess.Popen, limits: CommandLimits) -> Tail:
    assert proc.stdout is not None
    tail = Tail(limits.output_bytes)
    tail.thread = drain(os.dup(proc.stdout.fileno()), tail.add, "sandbox-command-output")
    proc.stdout.close()
    return tail


# --------------------------------------------------------------------------- gvisor


def gvisor_spec(rfs: rootfs.Rootfs, folder: Path, argv: Sequence[str], limits: CommandLimits,
                cgroup: str) -> dict:
    """The OCI runtime spec of one command: read-only root, `folder` read-write at /repo."""
    from plimsoll_ci.sandbox.gvisor import OciSpec

    view = limits.view or View()
    return OciSpec(
        args=list(argv), env=[f"{k}={v}" for k, v in view.environment().items()], cwd=WORKDIR,
        root=str(rfs.path),
        binds=[(WORKDIR, str(folder), "rw"), *((p, p, "ro") for p in view.ro)],
        tmp_options=["nosuid", "nodev", f"size={limits.tmpfs_bytes}"], nofile=1024,
        resources={"memory": {"limit": limits.memory_bytes}, "pids": {"limit": limits.pids},
                   "cpu": {"quota": int(limits.cpus * 100_000), "period": 100_000}},
        cgroup=cgroup).document()


def _gvisor(folder: Path, argv: tuple[str, ...], limits: CommandLimits,
            work: Path) -> _Started | CommandResult:
    from plimsoll_ci.sandbox import gvisor

    rfs = rootfs.build()
    runsc = gvisor.runsc_path()
    assert runsc
    platform = os.environ.get(gvisor.PLATFORM_ENV) or "ptrace"
    # runsc's cgroups, unless this host refused them once (then the grader's sandboxes run
    # without them too; `gvisor.retry_start` decides that)
    no_cgroups = bool(gvisor._NO_CGROUPS)
    evidence: dict[str, Any] = {
        "provider": "gvisor", "runtime": "runsc", "runtime_version": gvisor.runsc_version(runsc),
        "runtime_path": runsc, "platform": platform, "network": "none",
        "root": "read-only (OCI root.readonly), the minimal Python runtime",
        "mounts": {WORKDIR: "the folder, read-write", "/tmp": f"tmpfs {limits.tmpfs_bytes} bytes"},
        "limits": {"memory_bytes": limits.memory_bytes, "pids": limits.pids,
                   "cpus": limits.cpus, "timeout_s": limits.timeout_s},
        "user": f"{NOBODY} (nobody), no capabilities, no new privileges",
        "cgroups": "ignored: the host refused runsc's cgroups" if no_cgroups else "runsc cgroup",
    }
    view = limits.view or View()
    evidence["mounts"].update({p: "read-only (--venv)" for p in view.ro})
    program = program_inside(argv[0], rfs.path, view)
    if program is None:
        return _not_found(argv, evidence)
    cid = f"plimsoll-cmd-{secrets.token_hex(6)}"
    cgroup = "" if no_cgroups else f"/plimsoll/{cid}"
    bundle, state = work / "bundle", work / "state"
    bundle.mkdir()
    state.mkdir(mode=0o700)
    spec = gvisor_spec(rfs, folder, (program, *argv[1:]), limits, cgroup)
    (bundle / "config.json").write_text(json.dumps(spec, indent=1))
    command = [runsc, f"--root={state}", "--network=none", f"--platform={platform}",
               *(["--ignore-cgroups"] if not cgroup else []), "run", f"--bundle={bundle}", cid]
    proc = _popen(command)

    def stop() -> None:
        if proc.poll() is None:  # still running (timed out, or interrupted): delete the sandbox
            leftovers.stop_runsc(runsc, state, cid, proc)  # the process group goes anyway
        _group_killer(proc)()
        if cgroup:
            cpumod.remove_cgroup(cgroup)  # runsc leaves it behind when the sandbox was killed

    try:
        tail = _piped(proc, limits)
    except BaseException:
        stop()
        raise
    return _Started(_waiter(proc), _once(stop), tail, evidence)


def _once(stop: Callable[[], object]) -> Callable[[], None]:
    done: list[bool] = []

    def kill() -> None:
        if not done:
            done.append(True)
            stop()

    return kill


# --------------------------------------------------------------------------- process


def _process(folder: Path, argv: tuple[str, ...], limits: CommandLimits,
             work: Path) -> _Started | CommandResult:
    from plimsoll_ci.sandbox import process

    bwrap = process.bwrap_path()
    if bwrap and not process._bwrap_works(bwrap):
        bwrap = None
    evidence: dict = {"provider": "process", "runtime": "bubblewrap" if bwrap else "none",
                      "limits": {"memory_bytes": limits.memory_bytes, "pids": limits.pids,
                                 "timeout_s": limits.timeout_s}}
    if bwrap:
        rfs = rootfs.build()
        view = limits.view or View()
        program = program_inside(argv[0], rfs.path, view)
        evidence.update(runtime_path=bwrap, network="none",
                        root="read-only bind of the minimal Python runtime",
                        mounts={WORKDIR: "the folder, read-write", "/tmp": "tmpfs"})
        if program is None:
            return _not_found(argv, evidence)
        command = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                   "--cap-drop", "ALL", "--uid", str(NOBODY), "--gid", str(NOBODY),
                   "--hostname", "sandbox", "--ro-bind", str(rfs.path), "/",
                   "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
                   "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp",
                   "--bind", str(folder), WORKDIR,
                   *[x for p in view.ro for x in ("--ro-bind", p, p)],
                   "--remount-ro", "/", "--chdir", WORKDIR,
                   "--clearenv",
                   *[x for k, v in view.environment().items() for x in ("--setenv", k, v)],
                   "--", program, *argv[1:]]
        env = {"PATH": "/usr/bin:/bin"}
    else:
        evidence["root"] = "the host's own file system (no bubblewrap): a weak wall"
        found = shutil.which(argv[0], path=os.environ.get("PATH", "")) if "/" not in argv[0] \
            else argv[0]
        if found is None:
            return _not_found(argv, evidence)
        command = [found, *argv[1:]]
        env = {**ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work)}
    group = cpumod.own_cgroup(f"plimsoll-cmd-{secrets.token_hex(6)}", limits.memory_bytes,
                              limits.pids)
    evidence["cgroup"] = "own cgroup (memory, pids)" if group is not None else "none"

    def preexec() -> None:
        if group is not None:
            group.enter()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    proc = _popen(command, preexec, cwd=str(folder), env=env)
    kill = _group_killer(proc, group.remove if group is not None else (lambda: None))
    try:
        tail = _piped(proc, limits)
    except BaseException:
        kill()
        raise
    return _Started(_waiter(proc), _once(kill), tail, evidence)


# --------------------------------------------------------------------------- docker


def _docker(folder: Path, argv: tuple[str, ...], limits: CommandLimits,
            work: Path) -> _Started | CommandResult:
    import docker

    from plimsoll_ci.sandbox import docker as provider

    runtime = provider.runtime_name()
    rfs = rootfs.build()
    image = rootfs.docker_import(rfs)
    evidence = {"provider": "docker", "runtime": runtime, "image": image, "network": "none",
                "root": "read-only (docker read_only), /dev/shm read-only",
                "mounts": {WORKDIR: "the folder, read-write", "/tmp": "tmpfs"},
                "limits": {"memory_bytes": limits.memory_bytes, "pids": limits.pids,
                           "cpus": limits.cpus, "timeout_s": limits.timeout_s},
                "user": f"{NOBODY}:{NOBODY}, cap_drop ALL, no-new-privileges"}
    view = limits.view or View()
    program = program_inside(argv[0], rfs.path, view)
    if program is None:
        return _not_found(argv, evidence)
    client = provider._client()
    try:
        container = client.containers.create(
            image, command=[program, *argv[1:]], detach=True, tty=False, stdin_open=False,
            network_mode="none", read_only=True, runtime=runtime, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], user=f"{NOBODY}:{NOBODY}", working_dir=WORKDIR,
            mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes,
            pids_limit=limits.pids, nano_cpus=int(limits.cpus * 1e9),
            environment=view.environment(),
            tmpfs={"/tmp": f"size={limits.tmpfs_bytes},nosuid,nodev",
                   "/dev/shm": "ro,noexec,nosuid,nodev"},
            volumes={str(folder): {"bind": WORKDIR, "mode": "rw"},
                     **{p: {"bind": p, "mode": "ro"} for p in view.ro}},
            log_config=docker.types.LogConfig(type="json-file", config={"max-size": "1m"}),
            labels={"plimsoll-ci": "eval-command", "plimsoll-ci.work": str(work)})
    except docker.errors.DockerException as e:
        raise SandboxError(f"provider docker: cannot create the container ({e})") from None
    tail = Tail(limits.output_bytes)

    def remove() -> None:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - gone already, or dockerd slow: nothing more to do
            pass

    def wait(seconds: float) -> int | None:
        try:
            status = container.wait(timeout=max(seconds, 0.1))
        except Exception:  # noqa: BLE001 - the docker SDK's read timeout: still running
            return None
        return int(status.get("StatusCode", 1))

    def stop() -> None:
        try:
            container.kill()
        except Exception:  # noqa: BLE001 - it already exited
            pass
        try:
            tail.add(container.logs(stdout=True, stderr=True))
        except Exception:  # noqa: BLE001 - no logs: the tail says nothing
            pass
        remove()

    try:
        container.start()
    except BaseException as e:
        remove()
        if isinstance(e, docker.errors.DockerException):
            raise SandboxError(f"provider docker: cannot start the container ({e})") from None
        raise
    return _Started(wait, _once(stop), tail, evidence)


_RUNNERS: dict[str, Callable[[Path, tuple[str, ...], CommandLimits, Path],
                             _Started | CommandResult]] = {
    "gvisor": _gvisor,
    "docker": _docker,
    "process": _process,
}


def smoke(wanted: list[str]) -> int:
    """`pytest --version` over an empty folder in each provider available here (all by
    default); fails when a named provider, or gVisor, cannot run it."""
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "repo"
        folder.mkdir()
        open_up(folder)
        for name in wanted or list(all_providers.PROVIDERS):
            ok, why = all_providers.get(name).available()
            if not ok:
                print(f"command smoke: {name}: not available: {why}")
                failed += name in wanted or name == "gvisor"
                continue
            result = run_in_sandbox(name, folder, ["pytest", "--version"],
                                    CommandLimits(timeout_s=60))
            good = result.exit_code == 0
            failed += not good
            print(f"command smoke: {name}: exit {result.exit_code} in {result.seconds:.2f} s: "
                  f"{result.output.strip().splitlines()[-1] if result.output.strip() else ''}"
                  + ("" if good else " FAILED"))
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "smoke":
        print("usage: python3 -m plimsoll_ci.sandbox.command smoke [PROVIDER ...]",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(smoke(args[1:]))
