"""The one drain and tail a sandbox's pipes go through (a session's stderr, a command's output)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from plimsoll_ci.sandbox.session import STDERR_TAIL, Channel, Session, Stream, Tail, pipe_up


class _NoMeter:
    def seconds(self) -> float:
        return 0.0


def _session(channel: Channel) -> Session:
    return Session("process", channel, _NoMeter(), lambda: None, {}, time.monotonic())


def test_a_session_keeps_the_last_bytes_of_stderr_even_across_chunks() -> None:
    read_fd, write_fd = os.pipe()
    with _session(Channel(write_fd, Stream(read_fd))) as s:
        s.note_stderr(b"a" * 3000)
        s.note_stderr(b"b" * 3000)
        # the tail used to drop the whole first chunk, leaving 3000 bytes of the last 4096 written
        assert s.stderr_text() == ("a" * 3000 + "b" * 3000)[-STDERR_TAIL:]
        assert s.stderr.total == 6000


def test_a_tail_keeps_at_least_its_limit_and_counts_everything() -> None:
    tail = Tail(10)
    for chunk in (b"0123456789", b"abc", b"defghij", b"k"):
        tail.add(chunk)
    assert tail.text() == "bcdefghijk"
    assert tail.total == 21
    assert Tail(0).text() == ""


def test_a_chatty_runner_s_stderr_is_drained_to_its_end_into_the_tail() -> None:
    code = "import sys; sys.stderr.write('x' * 200_000 + 'END'); sys.stderr.flush()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    piped = pipe_up(proc)
    with _session(piped.channel) as s:
        piped.ref.append(s)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while s.stderr.total < 200_003 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert s.stderr.total == 200_003
        assert s.stderr_text() == ("x" * 200_000 + "END")[-STDERR_TAIL:]
