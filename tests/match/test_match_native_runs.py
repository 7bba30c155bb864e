"""The compiled runs (`match/_passes.c`) are the runs a plain loop and the pure-Python passes find.

The compiled part is optional: a machine that installs the package without a C compiler finds the
same values with the pure-Python passes (`re`). So each claim here holds for the SSE2 build, for
the portable build (the path other processors take, built here with `PLIMSOLL_PASSES_PORTABLE`),
against a plain reference. In CI the compiled part must be there: a missing build fails instead
of skipping.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import numpy as np
import pytest
from kit.native import IN_CI, need

from plimsoll_ci.match import b64, candidates, classes, decode
from plimsoll_ci.match.classes import C_B64, C_DIGIT, C_LOWER, C_UPPER, C_WORD


def reference(cls: bytes, bit: int, minimum: int) -> list[tuple[int, int, int]]:
    """(start, end, OR of the class bytes) of each maximal run, the plain way."""
    out, i, n = [], 0, len(cls)
    while i < n:
        if not cls[i] & bit:
            i += 1
            continue
        j, acc = i, 0
        while j < n and cls[j] & bit:
            acc |= cls[j]
            j += 1
        if j - i >= minimum:
            out.append((i, j, acc))
        i = j
    return out


def compiled(module: object, cls: bytes, bit: int, minimum: int) -> list[tuple[int, int, int]]:
    pairs, bits = module.runs(cls, bit, minimum, True)
    t = np.frombuffer(pairs, dtype=np.int32).tolist()
    plain, none = module.runs(cls, bit, minimum)
    assert plain == pairs and none is None
    return list(zip(t[0::2], t[1::2], bits, strict=True))


def random_classes(rng: random.Random) -> bytes:
    """Class bytes with runs of every length, dense or sparse, across 64-byte block edges."""
    n = rng.choice([0, 1, 7, 63, 64, 65, 127, 128, 129, rng.randint(0, 3000)])
    density = rng.choice([0.02, 0.3, 0.7, 0.97, 1.0])
    out = bytearray()
    while len(out) < n:
        run = rng.choice([1, 2, 5, 6, 7, 8, 9, 12, 63, 64, 65, rng.randint(1, 200)])
        fill = rng.random() < density
        out += bytes(rng.randrange(1, 256) if fill else rng.choice([0, 0, 0x80, 1, 2])
                     for _ in range(run))
    return bytes(out[:n])


@pytest.mark.parametrize("seed", range(3))
def test_compiled_runs_are_the_maximal_runs_a_plain_loop_finds(module: object, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        cls = random_classes(rng)
        for bit in (1, 2, 4, 8, 16, 32, 64, 128):
            for minimum in (1, 2, 6, 8, 64, 65):
                assert compiled(module, cls, bit, minimum) == reference(cls, bit, minimum), (
                    len(cls), bit, minimum)


def test_runs_of_a_whole_buffer_and_of_none_and_up_to_the_last_byte() -> None:
    need(classes.native, "the compiled runs")
    for n in (1, 63, 64, 65, 1000):
        full = bytes([C_WORD]) * n
        assert compiled(classes.native, full, C_WORD, 1) == [(0, n, C_WORD)]
        assert compiled(classes.native, full, C_WORD, n + 1) == []
        assert compiled(classes.native, bytes(n), C_WORD, 1) == []
        tail = bytes(n - 1) + bytes([C_DIGIT])
        assert compiled(classes.native, tail, C_DIGIT, 1) == [(n - 1, n, C_DIGIT)]
    assert compiled(classes.native, b"", C_WORD, 1) == []


@pytest.mark.parametrize("args, error", [
    ((b"\x01", 0, 1), ValueError), ((b"\x01", 256, 1), ValueError),
    ((b"\x01", 1, 0), ValueError), (("text", 1, 1), TypeError),
    ((np.zeros(8, dtype=np.int32)[::2], 1, 1), (TypeError, ValueError, BufferError)),
])
def test_bad_arguments_are_refused_with_an_error_not_a_crash(args: tuple, error: type) -> None:
    need(classes.native, "the compiled runs")
    with pytest.raises(error):
        classes.native.runs(*args)


def source_like(rng: random.Random) -> bytes:
    words = ["def", "NotImplementedError", "self", "x", "0x7fffffff", "3107713414", "MzEuNQ==",
             "aGVsbG8gd29ybGQ", "deadbeefcafe0123", "33313037373133343134", "\n", " ", "    ",
             "(", ")", "=", "_", "getResponseHeaders", "é", "\xa0", "1_000", "3.14159265358979",
             # hex: digits only (16+, high nibbles 2-7 or not), odd, mixed case, near 1 in 5 bad
             "3131313131313131", "1234567812345678", "31313131313131", "DEADBEEF",
             "deadbeefcafe012", "4142434445464748494a", "a1b2c3d4e5f6a7b8", "4a4b4c4d4e8f",
             "4a4b4c4d8e8f", "2A2b2C2d2E2f", "3131313131313131313131313131313a"]
    return "".join(rng.choice(words) + rng.choice(["", " ", ".", "\n"])
                   for _ in range(rng.randint(1, 20000))).encode()


def kept_the_plain_way(buf: bytes, pad: bool) -> list[tuple[int, int]]:
    """The base64 (`pad`) or hex runs of `buf` that may be encoded, from `re` and the checks the
    pure-Python passes make of each run (`b64.looks_base64`; a hex run's length and nibbles)."""
    out = []
    for a, e in candidates.runs(buf, b64.run_re() if pad else decode._hex_run(), pad, None):
        tok = buf[a:e]
        if pad:
            if b64.looks_base64(tok):
                out.append((a, e))
            continue
        bad, n = candidates.high_bad(tok), e - a
        if n % 2 == 0 and (bad == 0 and n >= 16 if tok.isdigit() else bad * 5 <= n // 2):
            out.append((a, e))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_encoded_runs_the_compiled_part_keeps_are_those_the_plain_checks_keep(seed: int) -> None:
    # The base64 and hex candidates the engine asks the compiled part for are the runs `re`
    # finds that the pure-Python passes' checks keep.
    need(classes.native, "the compiled runs")
    rng = random.Random(seed)
    for _ in range(8):
        buf = source_like(rng)
        cl = classes.byte_classes(buf)
        for pad in (True, False):
            rx = b64.run_re() if pad else decode._hex_run()
            assert candidates.runs(buf, rx, pad, cl) == kept_the_plain_way(buf, pad), pad
        cl.release()


def test_the_installed_package_carries_its_compiled_part_in_ci() -> None:
    # CI installs the package as its README says; the compiled part must come with it there,
    # or every scan silently takes the slower pure-Python passes.
    if not IN_CI:
        pytest.skip("checked in CI (CI=true), where the package is installed with a compiler")
    assert classes.native is not None, f"plimsoll_ci.match._passes did not build ({sys.version})"


def test_compiled_classes_are_the_tables_classes() -> None:
    need(classes.native, "the compiled runs")
    rng = random.Random(3)
    bufs = [bytes(range(256)) * 3, b"", b"a", b"ab", bytes(range(255, -1, -1))]
    bufs += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 999))) for _ in range(40)]
    for buf in bufs:
        compiled_cls = classes.byte_classes(buf)
        got = compiled_cls.padded.tolist()
        compiled_cls.release()
        assert got == [0, *buf.translate(classes._cls_lut_bytes()), 0]
    with pytest.raises(ValueError):
        classes.native.classify(b"abc", bytes(255), bytearray(3))
    with pytest.raises(ValueError):
        classes.native.classify(b"abc", bytes(256), bytearray(2))
    with pytest.raises(TypeError):  # out must be writable
        classes.native.classify(b"abc", bytes(256), b"xyz")


def test_compiled_base64_refuses_runs_outside_the_text() -> None:
    need(classes.native, "the compiled runs")
    i32 = np.array([0], dtype=np.int32)
    for starts, ends in ((i32, i32 + 9), (i32 + 2, i32 + 1), (i32 - 1, i32 + 2),
                         (i32, np.array([1, 2], dtype=np.int32))):
        with pytest.raises(ValueError):
            classes.native.b64_runs(b"QUJD", starts.tobytes(), ends.tobytes())
    data, good = classes.native.b64_runs(b"QUJDRA-_+/", np.array([0, 6], dtype=np.int32).tobytes(),
                                         np.array([6, 10], dtype=np.int32).tobytes())
    assert data[:4] == b"ABCD" and list(good) == [1, 0]  # (the second mixes both alphabets)


def test_compiled_base64_candidates_are_refused_for_classes_of_another_text() -> None:
    need(classes.native, "the compiled runs")
    text = b"MzEuNQ== NotImplementedError abcdefghijklm"
    cl = classes.byte_classes(text)
    pairs, keep = classes.native.base64_runs(cl.cls, text, C_B64, C_UPPER | C_LOWER)
    t = np.frombuffer(pairs, dtype=np.int32).tolist()
    assert list(zip(t[0::2], t[1::2], keep, strict=True)) == [
        (0, 6, 1), (9, 28, 1), (29, 42, 0)]  # padded; mixed case; one case only
    for args in ((cl.cls, text[:-1], C_B64, 3), (cl.cls, text, 0, 3), (cl.cls, text, C_B64, 0)):
        with pytest.raises(ValueError):
            classes.native.base64_runs(*args)
    cl.release()


@pytest.mark.parametrize("seed", range(3))
def test_base64_runs_kept_and_what_follows_each_are_the_plain_ones(module: object,
                                                                   seed: int) -> None:
    # The compiled call that hands back only the base64 runs kept gives the runs the plain
    # checks keep, and for each the length of the next run of 6+ (what says whether a wrapped
    # block may start there), 0 after the last one.
    rng = random.Random(seed)
    kept = 0
    for _ in range(12):
        buf = source_like(rng) + rng.choice([b"", b"QUJDRA", b"QUJDRA=", b"aGVsbG8gd29ybGQ"])
        every = [(m.start(), m.end()) for m in re.finditer(rb"[A-Za-z0-9+/_-]{6,}", buf)]
        want, second = [], []
        for i, (a, e) in enumerate(every):
            if buf[e : e + 1] == b"=" or b64.looks_base64(buf[a:e]):
                want += [a, e]
                second.append(every[i + 1][1] - every[i + 1][0] if i + 1 < len(every) else 0)
        pairs, nexts = module.base64_kept(buf.translate(classes._cls_lut_bytes()), buf, C_B64,
                                          C_UPPER | C_LOWER)
        assert np.frombuffer(pairs, dtype=np.int32).tolist() == want
        assert np.frombuffer(nexts, dtype=np.int32).tolist() == second
        kept += len(second)
    assert kept
    text = b"MzEuNQ== NotImplementedError abcdefghijklm"
    cl = classes.byte_classes(text)
    pairs, nexts = module.base64_kept(cl.cls, text, C_B64, C_UPPER | C_LOWER)
    assert np.frombuffer(pairs, dtype=np.int32).tolist() == [0, 6, 9, 28]
    assert np.frombuffer(nexts, dtype=np.int32).tolist() == [19, 13]
    for args in ((cl.cls, text[:-1], C_B64, 3), (cl.cls, text, 0, 3), (cl.cls, text, C_B64, 0)):
        with pytest.raises(ValueError):
            module.base64_kept(*args)


FUZZ = '''
import random, sys
import numpy as np
from plimsoll_ci.match import classes
N, rng = classes.native, random.Random(int(sys.argv[1]))
def rb(n):
    return rng.randbytes(n)
for _ in range(400):
    n, k = rng.randint(0, 300), rng.randint(0, 20)
    text = rb(n)
    dense = bytes(rng.choice(b"0123456789.:,_eExob+- ") for _ in range(n))
    def arr():
        return np.array([rng.randint(-2**31, 2**31 - 1) if rng.random() < 0.3
                         else rng.randint(-3, n + 3) for _ in range(k)], dtype=np.int32).tobytes()
    calls = [
        (N.runs, (text, rng.randint(-2, 300), rng.randint(-2, 100), rng.random() < 0.5)),
        (N.base64_runs, (text, rb(n) if rng.random() < 0.9 else rb(max(n - 1, 0)),
                         rng.randint(-1, 256), rng.randint(-1, 256))),
        (N.b64_runs, (text, arr(), arr())),
        (N.base64_kept, (text, rb(n) if rng.random() < 0.9 else rb(max(n - 1, 0)),
                         rng.randint(-1, 256), rng.randint(-1, 256))),
        (N.hex_runs, (text, rb(n) if rng.random() < 0.9 else rb(max(n - 1, 0)),
                      rng.randint(-1, 256), rng.randint(-1, 256), rng.randint(-1, 256))),
        (N.classify, (text, rb(rng.choice([255, 256, 257])), bytearray(rng.choice([n, n + 1])))),
        (N.word_windows, (text, rb(n) if rng.random() < 0.9 else rb(max(n - 1, 0)),
                          rng.randint(-1, 256), rng.randint(-5, n + 5),
                          rb(rng.choice([0, 131328, 135424, 135432, 131335])),
                          rng.randint(0, 2**64 - 1), rng.choice([0, 12, 24, 25, -1]),
                          rng.choice([-1, 0, 1, 3, 64, 65]))),
        (N.escape_lines, (text, dense if rng.random() < 0.9 else dense[:-1],
                          rng.choice([128, 128, 0, 256, 255]))),
        (N.wrapped_lines, (rb(n) + b"\\n" * (n % 2), rng.randint(-3, n + 3),
                           rng.randint(-3, n + 3), rng.choice([-1, 0, 16, 2**31 - 1]))),
        (N.base64_bounds, (text, arr(), arr(), rng.randint(-2, n + 2), rng.random() < 0.5,
                           rng.choice([-1, 0, 16]), rng.choice([-1, 15, 1024]))),
        (N.b64_join, (rb(rng.randint(0, 3 * n)), arr(), arr(), rb(rng.choice([k, k, k + 1])),
                      rb(3))),
        (N.number_candidates, (dense, rb(rng.choice([n, n, n + 1])) if rng.random() < 0.3
                               else classes.byte_classes(dense).cls.tobytes() if n else b"",
                               rng.randint(-5, n + 5), rb(rng.choice([512, 512, 511, 0])),
                               (rng.choice([4, 4, 0, 256]),
                                *(rng.choice([-1, 0, 1, 4, 15, 64, 65, 255, 2**31 - 1])
                                  for _ in range(6))))),
    ]
    for fn, args in calls:
        try:
            fn(*args)
        except (ValueError, TypeError, OverflowError):
            pass
print("ok")
'''


@pytest.mark.parametrize("seed", range(3))
def test_hostile_arguments_raise_errors_and_never_crash_the_process(seed: int) -> None:
    # Random texts, run arrays out of range (negative, past the end, 2**31 - 1), tables of the
    # wrong size, bits out of range and spans or runs outside the text, in a process of their
    # own: a read outside a buffer would end it with a signal, not an exception.
    need(classes.native, "the compiled runs")
    proc = subprocess.run([sys.executable, "-c", FUZZ, str(seed)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
