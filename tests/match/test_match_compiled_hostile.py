"""The compiled passes (`match/_passes.c`) and hostile buffers.

The places a pass follows after it releases the interpreter lock (runs, flags) come as `bytes`
only: a bytearray, an array or a memoryview of one could be changed by another thread after the
pass checked it, and is refused. A text or classes buffer that another thread changes while a
pass runs changes its answer, never where it reads. A buffer past the passes' int32 bound is
refused with an error that names the bound. `.ci/sanitize` runs these tests (and the equality
tests) against a build with AddressSanitizer and UndefinedBehaviorSanitizer, where a read or a
write outside a buffer ends the process.
"""

from __future__ import annotations

import array
import mmap
import subprocess
import sys
from collections.abc import Callable

import pytest
from kit.native import need

from plimsoll_ci.match import classes

I32 = array.array("i", [0, 4]).tobytes()


def _writable(kind: str, data: bytes) -> object:
    """`data` as a buffer that another thread could change."""
    if kind == "bytearray":
        return bytearray(data)
    if kind == "memoryview":
        return memoryview(bytearray(data))
    if kind == "readonly view":  # read-only to this caller, not to the bytearray's owner
        return memoryview(bytearray(data)).toreadonly()
    return array.array("B", data)  # (an array module array: writable too)


# (the pass, its arguments with `X` where a place buffer goes, which argument that is)
FOLLOWED: list[tuple[str, Callable[[object], tuple], str]] = [
    ("b64_runs", lambda x: (b"QUJDRA==", x, I32[4:]), "starts"),
    ("b64_runs", lambda x: (b"QUJDRA==", I32[:4], x), "ends"),
    ("base64_bounds", lambda x: (b"QUJDRA==", x, I32[:4], 99, True, 16, 1024), "pairs"),
    ("base64_bounds", lambda x: (b"QUJDRA==", I32, x, 99, True, 16, 1024), "nexts"),
    ("b64_join", lambda x: (b"ABC", x, I32[4:], b"\x01", b""), "starts"),
    ("b64_join", lambda x: (b"ABC", I32[:4], x, b"\x01", b""), "ends"),
    ("b64_join", lambda x: (b"ABC", I32[:4], I32[4:], x, b""), "take"),
]


def _place(what: str) -> bytes:
    """A fitting value for argument `what` (one run, 0..4)."""
    return {"take": b"\x01", "pairs": I32, "nexts": I32[:4], "starts": I32[:4],
            "ends": I32[4:]}[what]


@pytest.mark.parametrize("kind", ["bytearray", "memoryview", "readonly view", "array"])
@pytest.mark.parametrize("name, args, what", FOLLOWED)
def test_places_a_compiled_pass_follows_are_refused_unless_immutable_bytes(
        module: object, name: str, args: Callable[[object], tuple], what: str,
        kind: str) -> None:
    # (b64_runs, base64_bounds and b64_join took them as any buffer: checked, the lock
    # released, then read again, where another thread may have made a run longer meanwhile)
    fn = getattr(module, name)
    fn(*args(_place(what)))  # as bytes: taken
    with pytest.raises(TypeError, match=f"{name}: {what} must be bytes"):
        fn(*args(_writable(kind, _place(what))))


RACE = r'''
import array, random, sys, threading, time
from plimsoll_ci.match import classes
N = classes.native
sys.setswitchinterval(1e-6)  # hand the lock over as often as the interpreter can
rng = random.Random(int(sys.argv[1]))
n = 1 << 16
alphabet = b"QUJDRA==3107713414 0x1f 31.5 %33\\u0033&#51; deadbeef\n\t_-+/aZ"
text = bytearray(rng.choice(alphabet) for _ in range(n))
cls = bytearray(classes.byte_classes(bytes(text)).cls)
out = bytearray(n)
table = bytes(classes._cls_lut_bytes())
tables = bytes(256 + 65536 + 65536) + array.array("q", [1 << 16, 3 << 8]).tobytes()
luts = bytes([1]) * 512
pairs = array.array("i", [0, 8, 100, 140, 1000, 1100]).tobytes()
nexts = array.array("i", [0, 40, 16]).tobytes()
starts = array.array("i", [0, 100, 1000]).tobytes()
ends = array.array("i", [8, 140, 1100]).tobytes()
stop = threading.Event()

def change():
    # every byte of the text and the classes, changed while the passes run over them
    while not stop.is_set():
        for i in range(rng.randrange(64), n, 61):
            text[i] = rng.randrange(256)
            cls[i] = rng.randrange(256)

t = threading.Thread(target=change)
t.start()
calls = 0
deadline = time.monotonic() + float(sys.argv[2])
try:
    while time.monotonic() < deadline:
        for fn, args in (
                (N.runs, (cls, 32, 1, True)), (N.runs, (cls, 64, 70, False)),
                (N.base64_runs, (cls, text, 64, 3)), (N.base64_kept, (cls, text, 64, 3)),
                (N.hex_runs, (cls, text, 8, 3, 4)), (N.classify, (text, table, out)),
                (N.word_windows, (cls, text, 32, n, tables, 0x9E3779B97F4A7C15, 0, 3)),
                (N.escape_lines, (cls, text, 128)), (N.wrapped_lines, (text, 0, 40, n)),
                (N.number_candidates, (text, cls, n, luts, (4, 15, 1, 1, 1, 1, 1))),
                (N.b64_runs, (text, starts, ends)),
                (N.base64_bounds, (text, pairs, nexts, 50, False, 16, 1024)),
                (N.b64_join, (text, starts, ends, b"\x01\x00\x01", b"|"))):
            try:
                fn(*args)
            except ValueError:  # (classes that no longer fit the text: refused, not read)
                pass
            calls += 1
finally:
    stop.set()
    t.join()
print("ok", calls)
'''


@pytest.mark.parametrize("seed", range(2))
def test_a_buffer_another_thread_changes_while_a_pass_runs_never_sends_it_outside(
        seed: int) -> None:
    # A bytearray text and classes, changed byte by byte by a second thread while every pass
    # runs over them with the lock released: in a process of its own, where a read outside a
    # buffer ends it with a signal (or, under the sanitizers, a report and exit code 1).
    need(classes.native, "the compiled passes")
    proc = subprocess.run([sys.executable, "-c", RACE, str(seed), "2"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("ok "), proc.stderr[-3000:]
    assert int(proc.stdout.split()[1]) > 13  # (every pass ran)


def _big() -> mmap.mmap:
    """A buffer one byte past the passes' bound, its pages never touched (no memory taken)."""
    return mmap.mmap(-1, classes.native.MAX_LEN + 1)


def test_the_bound_of_the_compiled_passes_is_int32_places() -> None:
    need(classes.native, "the compiled passes")
    assert classes.native.MAX_LEN == 2**31 - 17 < 2**31 - 1


def test_a_buffer_past_the_int32_bound_is_refused_by_every_pass_naming_the_bound(
        module: object) -> None:
    # (b64_runs had no bound at all: a text of 2 GiB or more gave int32 places that wrapped)
    big = _big()
    try:
        calls = [
            ("runs", (big, 1, 1)), ("base64_runs", (big, big, 64, 3)),
            ("base64_kept", (big, big, 64, 3)), ("hex_runs", (big, big, 8, 3, 4)),
            ("b64_runs", (big, b"", b"")), ("classify", (big, bytes(256), big)),
            ("word_windows", (big, big, 32, 0, bytes(256 + 2 * 65536), 1, 0, 1)),
            ("escape_lines", (big, big, 128)), ("wrapped_lines", (big, 0, 0, 0)),
            ("base64_bounds", (big, b"", b"", 9, True, 16, 1024)),
            ("b64_join", (big, b"", b"", b"", b"")),
            ("number_candidates", (big, big, 0, bytes(512), (4, 1, 1, 1, 1, 1, 1))),
        ]
        for name, args in calls:
            with pytest.raises(ValueError, match=rf"^{name}: .* of {len(big)} bytes is over the "
                                                 rf"{len(big) - 1}-byte bound"):
                getattr(module, name)(*args)
    finally:
        big.close()
