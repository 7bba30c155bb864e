"""A running sandbox as the trusted side sees it: a line channel, a CPU meter, a kill switch.

Reading never trusts the other end: a line is bounded in size, a silent sandbox is cut off by its
CPU budget or by the wall-clock outer bound, and whatever the sandbox prints on stderr is drained
into a small tail (so a chatty controller can neither block nor flood the grader).
"""

from __future__ import annotations

import collections
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

MAX_LINE = 8 * 1024 * 1024
STDERR_TAIL = 4096


class Limits(NamedTuple):
    """What a sandbox may use; every provider enforces these in its own way."""

    memory_bytes: int = 1024 * 1024 * 1024
    pids: int = 128
    tmpfs_bytes: int = 16 * 1024 * 1024
    cpus: float = 1.0  # docker --cpus; the others are bounded by the CPU budget


class Received(NamedTuple):
    """One attempt to read a line: `line` when one came, else why not (`eof`, `cpu`, `wall`, `size`)."""

    line: bytes | None
    why: str
    cpu: float  # CPU seconds the sandbox used while we waited
    wall: float


class Stream:
    """Byte source turned into lines; `feed` may demultiplex (docker) before lines are cut."""

    def __init__(self, fd: int, feed: Callable[[bytes], tuple[bytes, bytes]] | None = None) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.feed = feed
        self.stderr_from_feed = bytearray()
        self.eof = False

    def read_some(self) -> None:
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return
        if self.feed is not None:
            out, err = self.feed(chunk)
            self.buf += out
            self.stderr_from_feed += err
        else:
            self.buf += chunk


class Session:
    """A started sandbox. Providers fill in the process, the channel and the meter."""

    def __init__(self, provider: str, configured_tier: str, write: Callable[[bytes], None],
                 stream: Stream, meter, kill: Callable[[], None],
                 host_evidence: dict, started: float) -> None:
        self.provider = provider
        self.configured_tier = configured_tier
        self._write = write
        self.stream = stream
        self.meter = meter
        self._kill = kill
        self.host_evidence = host_evidence
        self.start_seconds = time.monotonic() - started
        self.stderr_tail: collections.deque[bytes] = collections.deque()
        self.stderr_bytes = 0
        self._stderr_lock = threading.Lock()
        self.closed = False
        self.code_path = "/controller"  # where the runner finds the controller, inside

    # stderr is drained by a thread for pipe-based providers, inline for multiplexed ones
    def note_stderr(self, data: bytes) -> None:
        with self._stderr_lock:
            self.stderr_bytes += len(data)
            self.stderr_tail.append(data)
            size = sum(len(x) for x in self.stderr_tail)
            while size > STDERR_TAIL and len(self.stderr_tail) > 1:
                size -= len(self.stderr_tail.popleft())

    def stderr_text(self) -> str:
        """The last few KB the sandbox wrote to stderr, as printable text."""
        with self._stderr_lock:
            data = b"".join(self.stderr_tail)[-STDERR_TAIL:]
        return data.decode("utf-8", "replace")

    def cpu(self) -> float:
        """CPU seconds used by the sandbox so far (host-side accounting)."""
        try:
            return self.meter.seconds()
        except (OSError, ValueError):
            return self._last_cpu
    _last_cpu = 0.0

    def send(self, data: bytes) -> bool:
        """Write one line; False when the sandbox no longer reads."""
        try:
            self._write(data)
            return True
        except (BrokenPipeError, ConnectionError, OSError, ValueError):
            return False

    def recv(self, cpu_limit: float, wall_limit: float, poll: float = 0.02,
             cpu_start: float | None = None, wall_start: float | None = None) -> Received:
        """Read one line, giving up past `cpu_limit` CPU seconds or `wall_limit` wall seconds
        (counted from `cpu_start` / `wall_start` when given, e.g. readings taken before a send)."""
        t0 = time.monotonic() if wall_start is None else wall_start
        c0 = self.cpu() if cpu_start is None else cpu_start
        while True:
            nl = self.stream.buf.find(b"\n")
            if nl >= 0:
                line = bytes(self.stream.buf[:nl])
                del self.stream.buf[:nl + 1]
                return Received(line, "line", self.cpu() - c0, time.monotonic() - t0)
            if len(self.stream.buf) > MAX_LINE:
                return Received(None, "size", self.cpu() - c0, time.monotonic() - t0)
            if self.stream.eof:
                return Received(None, "eof", self.cpu() - c0, time.monotonic() - t0)
            ready, _, _ = select.select([self.stream.fd], [], [], poll)
            if ready:
                self.stream.read_some()
                if self.stream.stderr_from_feed:
                    self.note_stderr(bytes(self.stream.stderr_from_feed))
                    self.stream.stderr_from_feed.clear()
                continue
            used = self.cpu() - c0
            self._last_cpu = used + c0
            if used > cpu_limit:
                return Received(None, "cpu", used, time.monotonic() - t0)
            if time.monotonic() - t0 > wall_limit:
                return Received(None, "wall", used, time.monotonic() - t0)

    def close(self) -> None:
        """Stop the sandbox and release everything it held; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        try:
            self._kill()
        finally:
            try:
                os.close(self.stream.fd)
            except OSError:
                pass

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def drain(fd: int, session_ref: list) -> threading.Thread:
    """Start a thread that reads `fd` to its end into the session's stderr tail."""

    def run() -> None:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            if session_ref:
                session_ref[0].note_stderr(chunk)
        try:
            os.close(fd)
        except OSError:
            pass

    t = threading.Thread(target=run, name="sandbox-stderr", daemon=True)
    t.start()
    return t


class Piped(NamedTuple):
    """A started runner process wired for the protocol (see `pipe_up`)."""

    write: Callable[[bytes], None]
    stream: Stream
    ref: list  # holds the Session once it exists, so drained stderr reaches it
    stop: Callable[[Callable[[], None] | None], None]


def pipe_up(proc: subprocess.Popen) -> Piped:
    """Wire a runner started with three pipes: stderr drained into the session's tail, stdout as
    a bounded line `Stream`, stdin for writes; `stop(before_kill)` closes stdin, runs
    `before_kill`, kills the process group and reaps it."""
    assert proc.stdin and proc.stdout and proc.stderr
    ref: list = []
    drain(os.dup(proc.stderr.fileno()), ref)
    proc.stderr.close()
    stream = Stream(os.dup(proc.stdout.fileno()))
    proc.stdout.close()
    stdin = proc.stdin

    def write(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    def stop(before_kill: Callable[[], None] | None = None) -> None:
        try:
            stdin.close()
        except OSError:
            pass
        if before_kill is not None:
            before_kill()
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    return Piped(write, stream, ref, stop)
