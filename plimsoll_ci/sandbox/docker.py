"""Provider `docker`: the Docker SDK with the `runsc` runtime. Tier `kernel` (with `runc`: `container`).

The image is the minimal Python runtime `docker import`ed from its tarball (no registry). The
container has no network, a read-only root, every capability dropped, no new privileges, memory,
pids and CPU limits, a small tmpfs on /tmp, and the controller's staged files mounted read-only.
Its stdin/stdout are the protocol channel (the attach stream, demultiplexed here).
"""

from __future__ import annotations

import os
import socket
import struct
import time

from plimsoll_ci.errors import SandboxError
from plimsoll_ci.sandbox import cpu as cpumod
from plimsoll_ci.sandbox import owner
from plimsoll_ci.sandbox.session import Channel, Limits, Session, Stream
from plimsoll_ci.sandbox.stage import Stage

RUNTIME_ENV = "PLIMSOLL_DOCKER_RUNTIME"


def runtime_name() -> str:
    """The docker runtime sandboxes start under ($PLIMSOLL_DOCKER_RUNTIME, default runsc)."""
    return os.environ.get(RUNTIME_ENV) or "runsc"


def tier_of(runtime: str) -> str:
    """The configured tier of a docker runtime: gVisor's runsc is `kernel`, anything else `container`."""
    return "kernel" if runtime == "runsc" else "container"


def configured_tier() -> str:
    """`kernel` under the runsc runtime, `container` under any other."""
    return tier_of(runtime_name())


def retry_start(stderr: str) -> bool:
    """Docker has no start-up retry: a failed start is the grading's outcome."""
    return False


def _client():
    import docker

    return docker.from_env(timeout=30)


def socket_path() -> str | None:
    """The unix socket the docker client talks to (`DOCKER_HOST`, else the default); None for
    a TCP or SSH host."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if host.startswith("unix://"):
        return host[len("unix://"):]
    return None if "://" in host else host


def unreachable(e: BaseException) -> str:
    """Why dockerd could not be asked, in words that say what to do: a socket this user may
    not use is not a dockerd to start."""
    path = socket_path()
    if path is not None:
        if not os.path.exists(path):
            return (f"no docker socket at {path}: start dockerd (.ci/sandbox-setup), or point "
                    "DOCKER_HOST at its socket")
        if not os.access(path, os.R_OK | os.W_OK):
            return (f"the docker socket {path} is not readable by this user: dockerd may well be "
                    "running; add this user to the docker group (sudo usermod -aG docker USER, "
                    "then log in again), or use the gvisor or process provider")
    if isinstance(e, PermissionError) or "Permission denied" in str(e):
        return ("no access to the docker socket (permission denied); add this user to the "
                "docker group (sudo usermod -aG docker USER, then log in again)")
    return f"dockerd does not answer ({type(e).__name__}); start it (see .ci/sandbox-setup)"


def available() -> tuple[bool, str]:
    """Whether dockerd answers and has the runtime sandboxes start under (runsc by default)."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return False, "the docker Python package is not installed"
    try:
        info = _client().info()
    except Exception as e:  # noqa: BLE001 - any failure means "not here"
        return False, unreachable(e)
    if runtime_name() not in (info.get("Runtimes") or {}):
        return False, (f"dockerd has no {runtime_name()} runtime; register it in "
                       "/etc/docker/daemon.json (sudo runsc install, then restart dockerd)")
    return True, ""


class _Demux:
    """Docker's attach stream without a TTY: frames of [type, 0, 0, 0, size BE32] + payload."""

    def __init__(self) -> None:
        self.pending = bytearray()

    def __call__(self, chunk: bytes) -> tuple[bytes, bytes]:
        self.pending += chunk
        out, err = bytearray(), bytearray()
        while len(self.pending) >= 8:
            kind, size = self.pending[0], struct.unpack(">I", self.pending[4:8])[0]
            if len(self.pending) < 8 + size:
                break
            payload = self.pending[8:8 + size]
            del self.pending[:8 + size]
            (out if kind == 1 else err).extend(payload)
        return bytes(out), bytes(err)


def start(stage: Stage, limits: Limits) -> Session:
    """Create, attach and start one grading container."""
    from plimsoll_ci.sandbox import rootfs as rootfs_mod

    runtime = runtime_name()
    try:
        import docker
    except ImportError as e:
        raise SandboxError("provider docker: the docker Python package is not installed") from e
    try:
        client = _client()
        info = client.info()
    except Exception as e:  # noqa: BLE001
        raise SandboxError(f"provider docker: {unreachable(e)}") from None
    if runtime not in (info.get("Runtimes") or {}):
        raise SandboxError(f"provider docker: dockerd has no {runtime!r} runtime; register it in "
                           "/etc/docker/daemon.json (see .ci/sandbox-setup)")
    rfs = rootfs_mod.build()
    image = rootfs_mod.docker_import(rfs)
    started = time.monotonic()
    try:
        container = client.containers.create(
            image,
            command=[rfs.python, "-I", "-B", "/plimsoll/runner.py"],
            stdin_open=True, tty=False, detach=True,
            network_mode="none", read_only=True, runtime=runtime,
            cap_drop=["ALL"], security_opt=["no-new-privileges"],
            user="65534:65534", working_dir="/",
            mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes,
            pids_limit=limits.pids, nano_cpus=int(limits.cpus * 1e9),
            # /dev/shm read-only: the only writable place is the sized /tmp
            tmpfs={"/tmp": f"size={limits.tmpfs_bytes},noexec,nosuid,nodev",
                   "/dev/shm": "ro,noexec,nosuid,nodev"},
            volumes={str(stage.controller): {"bind": "/controller", "mode": "ro"},
                     str(stage.runner): {"bind": "/plimsoll", "mode": "ro"}},
            environment={"PATH": "/usr/local/bin", "HOME": "/tmp", "OPENBLAS_NUM_THREADS": "1"},
            # the stage names the grading that owns the container (and what to sweep after it);
            # the owner names its process, so a later run reaps it if this one is killed
            labels={"plimsoll-ci": "grading", "plimsoll-ci.stage": str(stage.root),
                    **owner.labels()},
        )
    except docker.errors.DockerException as e:
        raise SandboxError(f"provider docker: cannot create the container ({e})") from None
    raws: list[socket.socket] = []

    def kill() -> None:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - gone already, or dockerd slow: nothing more to do
            pass
        for raw in raws:
            try:
                raw.close()
            except OSError:
                pass

    try:
        sock = client.api.attach_socket(container.id, params={"stdin": 1, "stdout": 1,
                                                              "stderr": 1, "stream": 1})
        raws.append(getattr(sock, "_sock", sock))
        try:
            container.start()
        except docker.errors.DockerException as e:
            raise SandboxError(f"provider docker: cannot start the container ({e})") from None
        container.reload()
        pid = int(container.attrs.get("State", {}).get("Pid") or 0)
        if not pid:
            raise SandboxError("provider docker: the container has no host process to account "
                               "CPU to")
        meter = cpumod.meter_for(pid)
        evidence = _evidence(runtime, info, image, container.id, limits, meter.source)
        fd = os.dup(raws[0].fileno())  # one socket carries both directions
        return Session("docker", Channel(fd, Stream(fd, _Demux())), meter, kill, evidence,
                       started)
    except BaseException:
        kill()  # a failed or interrupted start leaves no container behind
        raise


def _evidence(runtime: str, info: dict, image: str, container_id: str, limits: Limits,
              accounting: str) -> dict:
    runtime_path = (info.get("Runtimes") or {}).get(runtime, {}).get("path", runtime)
    return {
        "provider": "docker",
        "runtime": runtime,
        "runtime_path": runtime_path,
        "runtime_version": _runtime_version(runtime_path) if runtime == "runsc" else runtime,
        "docker_version": info.get("ServerVersion", ""),
        "image": image,
        "container": container_id[:12],
        "platform": "ptrace" if runtime == "runsc" else "native",
        "network": "none",
        "root": "read-only (docker read_only), /dev/shm read-only",
        "limits": {"memory_bytes": limits.memory_bytes, "pids": limits.pids,
                   "cpus": limits.cpus, "tmpfs_bytes": limits.tmpfs_bytes},
        "user": "65534:65534, cap_drop ALL, no-new-privileges",
        "cpu_accounting": accounting,
    }


def _runtime_version(path: str) -> str:
    from plimsoll_ci.sandbox.gvisor import runsc_version

    return runsc_version(path) if os.path.exists(path) else ""
