"""A running sandbox as the trusted side sees it: a line channel, a CPU meter, a kill switch.

Nothing the sandbox does can block the host: both directions of the channel are non-blocking and
every write and read is bounded by the wall clock. A line read is bounded in size, a silent
sandbox is cut off by its CPU budget or by the wall-clock outer bound, a sandbox that stops
reading its input is cut off when a line cannot be written in time, and whatever the sandbox
prints on stderr is drained into a small tail (so a chatty controller can neither block nor flood
the grader). Every session this process starts is listed until it is closed, so an interrupted
run can stop them all (`close_all`).
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
_LIVE: set[Session] = set()
_LIVE_LOCK = threading.Lock()


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


class Tail:
    """The last `limit` bytes of a stream (at least that many once they came) and how many came
    in all; `add` is safe from a draining thread. One for a session's stderr, one for a command's
    output (`sandbox.command`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.total = 0
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None  # the drain filling it, when there is one

    def add(self, data: bytes) -> None:
        """Keep `data` at the end, dropping whole old chunks the limit no longer needs."""
        with self.lock:
            self.total += len(data)
            self.chunks.append(data)
            self.size += len(data)
            while len(self.chunks) > 1 and self.size - len(self.chunks[0]) >= self.limit:
                self.size -= len(self.chunks.popleft())

    def text(self, settle: float = 0.0) -> str:
        """The kept bytes as printable text, after waiting up to `settle` seconds for the drain."""
        if self.thread is not None and settle > 0:
            self.thread.join(settle)
        with self.lock:
            data = b"".join(self.chunks)[-self.limit:] if self.limit else b""
        return data.decode("utf-8", "replace")


def drain(fd: int, take: Callable[[bytes], None], name: str) -> threading.Thread:
    """Read `fd` to its end on a daemon thread named `name`, handing each chunk to `take`, then
    close it: the one loop that drains a sandbox's pipe (so a chatty one never blocks us)."""

    def run() -> None:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            take(chunk)
        try:
            os.close(fd)
        except OSError:
            pass

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


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


class Channel(NamedTuple):
    """The protocol's two directions: the fd the host writes lines to, and the line stream it
    reads (the same fd for a socket). Both are made non-blocking by the session."""

    write_fd: int
    stream: Stream


class Session:
    """A started sandbox. Providers fill in the channel, the meter and the kill switch."""

    def __init__(self, provider: str, channel: Channel, meter, kill: Callable[[], None],
                 host_evidence: dict, started: float) -> None:
        self.provider = provider
        self.write_fd = channel.write_fd
        self.stream = channel.stream
        for fd in {self.write_fd, self.stream.fd}:
            os.set_blocking(fd, False)
        self.meter = meter
        self._kill = kill
        self.host_evidence = host_evidence
        self.start_seconds = time.monotonic() - started
        self.stderr = Tail(STDERR_TAIL)
        self._open_fds = {self.write_fd, self.stream.fd}
        self.closed = False
        self.code_path = "/controller"  # where the runner finds the controller, inside
        with _LIVE_LOCK:
            _LIVE.add(self)

    # stderr is drained by a thread for pipe-based providers, inline for multiplexed ones
    def note_stderr(self, data: bytes) -> None:
        """Keep `data` in the stderr tail."""
        self.stderr.add(data)

    def stderr_text(self) -> str:
        """The last few KB the sandbox wrote to stderr, as printable text."""
        return self.stderr.text()

    def cpu(self) -> float:
        """CPU seconds used by the sandbox so far (host-side accounting)."""
        try:
            return self.meter.seconds()
        except (OSError, ValueError):
            return self._last_cpu
    _last_cpu = 0.0

    def _pull(self) -> None:
        self.stream.read_some()
        if self.stream.stderr_from_feed:
            self.note_stderr(bytes(self.stream.stderr_from_feed))
            self.stream.stderr_from_feed.clear()

    def send(self, data: bytes, wall_limit: float, poll: float = 0.05) -> str:
        """Write all of `data` within `wall_limit` seconds: '' when written, 'eof' when the sandbox
        no longer reads, 'stalled' when it stopped reading its input. While it waits, what the
        sandbox writes is taken in (up to the line bound), so neither side blocks the other."""
        view = memoryview(data)
        deadline = time.monotonic() + wall_limit
        while view:
            try:
                view = view[os.write(self.write_fd, view):]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionError, OSError, ValueError):
                return "eof"
            left = deadline - time.monotonic()
            if left <= 0:
                return "stalled"
            take = not self.stream.eof and len(self.stream.buf) <= MAX_LINE
            readable, _, _ = select.select([self.stream.fd] if take else [], [self.write_fd],
                                           [], min(left, poll))
            if readable:
                self._pull()
        return ""

    def recv(self, cpu_limit: float, wall_limit: float, poll: float = 0.02,
             cpu_start: float | None = None, wall_start: float | None = None) -> Received:
        """Read one line, giving up past `cpu_limit` CPU seconds or `wall_limit` wall seconds
        (counted from `cpu_start` / `wall_start` when given, e.g. readings taken before a send).
        The bounds hold even while bytes keep trickling in without a line end."""
        t0 = time.monotonic() if wall_start is None else wall_start
        c0 = self.cpu() if cpu_start is None else cpu_start
        checked = time.monotonic()
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
                self._pull()
            now = time.monotonic()
            if ready and now - checked < poll:
                continue  # bytes are flowing: look for a line first, check the bounds every poll
            checked = now
            used = self.cpu() - c0
            self._last_cpu = used + c0
            if used > cpu_limit:
                return Received(None, "cpu", used, now - t0)
            if now - t0 > wall_limit:
                return Received(None, "wall", used, now - t0)

    def _close_fd(self, fd: int) -> None:
        if fd in self._open_fds:
            self._open_fds.discard(fd)
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        """Stop the sandbox and release everything it held. Safe to call twice, and to call again
        after an interrupted close (each step is done once, the kill is repeatable)."""
        if self.closed:
            return
        if self.write_fd != self.stream.fd:
            self._close_fd(self.write_fd)  # end of input first: a runner still reading just ends
        self._kill()
        self._close_fd(self.write_fd)
        self._close_fd(self.stream.fd)
        self.closed = True
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def close_all() -> int:
    """Stop every sandbox this process started and has not closed (an interrupted run's last
    step); how many there were."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for session in live:
        try:
            session.close()
        except Exception:  # noqa: BLE001 - stop the others whatever one of them does
            pass
    return len(live)


class Piped(NamedTuple):
    """A started runner process wired for the protocol (see `pipe_up`)."""

    channel: Channel
    ref: list  # holds the Session once it exists, so drained stderr reaches it


def pipe_up(proc: subprocess.Popen) -> Piped:
    """Wire a runner started with three pipes: stderr drained into the session's tail, stdout as
    a bounded line `Stream`, stdin as the channel's write end (the session closes both)."""
    assert proc.stdin and proc.stdout and proc.stderr
    ref: list = []

    def take(chunk: bytes) -> None:
        if ref:
            ref[0].note_stderr(chunk)

    drain(os.dup(proc.stderr.fileno()), take, "sandbox-stderr")
    proc.stderr.close()
    stream = Stream(os.dup(proc.stdout.fileno()))
    proc.stdout.close()
    write_fd = os.dup(proc.stdin.fileno())
    proc.stdin.close()
    return Piped(Channel(write_fd, stream), ref)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a runner's whole process group (it was started in a session of its own) and reap it."""
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
