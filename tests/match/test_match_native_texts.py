"""The compiled words and lines (`match/_texts.c`) are what the pure-Python passes give.

Text candidates with their windows of word runs, the lines that hold escapes, the lines of a
wrapped base64 block and spans joined with a separator: each compared with its reference on
random and hostile buffers, in the SSE2 build and in the portable one (the plain-C path of other
processors). In CI the compiled part must be there: a missing build fails instead of skipping.
"""

from __future__ import annotations

import base64
import random
import re

import numpy as np
import pytest

from plimsoll_ci.match import b64, classes, decode, wordruns
from plimsoll_ci.match.classes import C_ESC, C_WORD
from plimsoll_ci.match.index import SEEN_CANDIDATES, TAG_BITS, word_tag
from plimsoll_ci.shipscan.scan import Scanner
from plimsoll_ci.withheld import build_set, parse


def plain_classes(buf: bytes) -> bytes:
    """The class bytes of `buf`, one table lookup a byte (no compiled pass)."""
    return buf.translate(classes._cls_lut_bytes())


# --------------------------------------------------------------------------- text candidates

TEXT_SETS = [["stall drift-12", "left right"], ["alpha"], ["skip-step up-3", "Gamma delta eps"],
             ["a" * 300 + " tail", "one two three four five"], ["Épée garde", "x"],
             ["__init__", "_attrs_to_script"], ["chardet", "idna", "sekrit-token-xyz"]]
POOL = ["stall", "drift", "12", "left", "right", "alpha", "Gamma", "delta", "eps", "skip", "step",
        "up", "3", "a" * 300, "tail", "one", "two", "three", "four", "five", "Épée", "garde", "x",
        "STALL", "Alpha", "alphA", "zzzz", "ab", "a" * 255, "a" * 256, "init", "attrs", "to",
        "script", "chardet", "CHARDET", "idna", "sekrit", "token", "xyz", "\xa0", "é", "ÿ"]


def words(rng: random.Random) -> bytes:
    """Words of every length the tables clip (up to 300), cases, bytes past ASCII, and a buffer
    that may end inside a word shorter than four bytes (the tag read at the text's end)."""
    out = "".join(rng.choice(POOL) + rng.choice([" ", "-", "\n", "  ", ".", "_", "__", ""])
                  for _ in range(rng.randint(0, 2500)))
    return (out + rng.choice(["", "a", "ab", "abc", "x y", "é"])).encode()


def reference_windows(buf: bytes, index: object, limit: int) -> list[list[int]]:
    """The rows `word_windows` gives, found the plain way: every word run (`re`), those that
    start before `limit` whose first one to three lengths (clipped to 255, 0 past the last run)
    are an entry's and, for a tagged set, whose first word's tag is an entry's, each with the
    starts and the ends of its k runs (past the last: start -1, the last run's end)."""
    runs = [(m.start(), m.end()) for m in re.finditer(rb"[0-9A-Za-z\x80-\xff]+", buf)]
    keys = {tuple(min(x, 255) for x in lengths[:3]) for lengths in index.text_runs}
    k, rows = index.max_runs, []
    for i, (s, e) in enumerate(runs):
        if s >= limit:
            break
        lens = [min(b - a, 255) for a, b in runs[i : i + 3]] + [0, 0]
        if not any(tuple(lens[:n]) in keys for n in (1, 2, 3)):
            continue
        if not index.untagged and word_tag(buf[s:e].lower(), index.mult) not in index.tags:
            continue
        window = [runs[min(i + r, len(runs) - 1)] for r in range(k)]
        rows.append([a if i + r < len(runs) else -1 for r, (a, _) in enumerate(window)]
                    + [b for _, b in window])
    return rows


@pytest.mark.parametrize("keyed", [False, True])
def test_text_candidates_and_their_windows_are_the_plain_ones(keyed: bool,
                                                              module: object) -> None:
    # One compiled call finds the word runs, picks the candidates (keys of one to three run
    # lengths, lengths over 255 clipped, the first word's tag under a public or keyed multiplier)
    # among those that start before a limit, and gives each one's window of runs.
    rng = random.Random(11 + keyed)
    key = b"k" * 32 if keyed else None
    picked = 0
    for texts in TEXT_SETS:
        doc, _ = build_set(values=[(f"t{i}", t) for i, t in enumerate(texts)], key=key)
        index = Scanner(parse(doc, key=key)).index
        tagged, joined = wordruns._joined_tables(index)
        for _ in range(5):
            buf = words(rng)
            cls = plain_classes(buf)
            for limit in sorted({-1, 0, len(buf) // 3, len(buf), len(buf) + 7}):
                rows = module.word_windows(cls, buf, C_WORD, limit, joined, index.mult,
                                           TAG_BITS if tagged else 0, index.max_runs)
                got = np.frombuffer(rows, dtype=np.int32).reshape(-1, 2 * index.max_runs)
                assert got.tolist() == reference_windows(buf, index, limit), (
                    texts, limit)
                picked += len(got)
    assert picked  # (the buffers hold the entries' words: there was something to pick)


def test_text_candidates_refuse_tables_classes_and_windows_that_do_not_fit(module: object
                                                                           ) -> None:
    tables = bytes(256 + 65536 * 2)
    for args in ((b"ab", b"abc", C_WORD, 3, tables, 1, 0, 1),  # classes not the text's length
                 (b"ab", b"ab", 0, 2, tables, 1, 0, 1), (b"ab", b"ab", 256, 2, tables, 1, 0, 1),
                 (b"ab", b"ab", C_WORD, 2, tables[:-1], 1, 0, 1),
                 (b"ab", b"ab", C_WORD, 2, tables, 1, 12, 1),  # no tag table after them
                 (b"ab", b"ab", C_WORD, 2, tables, 1, 25, 1),
                 (b"ab", b"ab", C_WORD, 2, tables, 1, 0, 0),
                 (b"ab", b"ab", C_WORD, 2, tables, 1, 0, 65)):
        with pytest.raises(ValueError):
            module.word_windows(*args)
    one = bytearray(tables)
    one[2] = 1  # a one-run key of length 2
    cls = bytes([C_WORD, C_WORD, 0, C_WORD])
    rows = module.word_windows(cls, b"ab c", C_WORD, 9, bytes(one), 1, 0, 2)
    assert np.frombuffer(rows, dtype=np.int32).tolist() == [0, 3, 2, 4]


# --------------------------------------------------------------------------- escape lines

ESCAPE_BYTES = "%\\&#;xu0123456789abcdefABCDEFGgz \n\r\t"


def escapes(rng: random.Random) -> bytes:
    """Leads with what may follow them (hex or not, entities of 1 to 11 letters, a `#`, a missing
    `;`), lines of every length, and any tail: a lead may be the buffer's last byte."""
    parts = []
    for _ in range(rng.randint(0, 600)):
        r = rng.random()
        if r < 0.3:
            parts.append(rng.choice(["%3", "%33", "%G3", "\\x4", "\\x41", "\\u004", "\\u0041",
                                     "\\U0041", "&amp;", "&#51;", "&#;", "&;", "&#x41;", "&&",
                                     "&" + "a" * rng.randint(1, 12) + ";", "%%", "\\\\x41"]))
        elif r < 0.4:
            parts.append("\n" if rng.random() < 0.8 else "\r\n")
        else:
            parts.append("".join(rng.choice(ESCAPE_BYTES) for _ in range(rng.randint(1, 12))))
    return "".join(parts).encode()


@pytest.mark.parametrize("seed", range(3))
def test_escape_lines_are_the_lines_the_python_search_finds(seed: int, module: object) -> None:
    # (line start, line end, first escape) of each line with an escape or an entity: the
    # compiled pass over the leads is `re`'s search from each line's first lead, to the last
    # byte of the buffer.
    rng = random.Random(seed)
    found = 0
    for _ in range(60):
        buf = escapes(rng)
        want = list(decode.escape_lines(buf, None))
        rows = np.frombuffer(module.escape_lines(plain_classes(buf), buf, C_ESC), dtype=np.int32)
        assert [tuple(r) for r in rows.reshape(-1, 3).tolist()] == want, buf
        found += len(want)
    assert found


def test_escape_lines_refuse_classes_of_another_text(module: object) -> None:
    for args in ((b"\x80\x80", b"%41x", C_ESC), (b"\x80", b"%", 0), (b"\x80", b"%", 256)):
        with pytest.raises(ValueError):
            module.escape_lines(*args)
    rows = module.escape_lines(bytes([C_ESC, 0, 0, 0]), b"&lt;", C_ESC)
    assert np.frombuffer(rows, dtype=np.int32).tolist() == [0, 4, 0]


# --------------------------------------------------------------------------- wrapped blocks


def blocks(rng: random.Random) -> bytes:
    """Wrapped base64 of every width (a multiple of 4 or not, short and long), indented or not,
    with CRLF, padding, a last line cut, prose and code around it."""
    out = []
    for _ in range(rng.randint(1, 12)):
        raw = rng.randbytes(rng.randint(0, 400))
        enc = base64.b64encode(raw).decode()
        if rng.random() < 0.3:
            enc = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        width = rng.choice([12, 15, 16, 17, 20, 64, 76, 1024, 1028])
        indent = rng.choice(["", "    ", "\t", "  "])
        lines = [enc[i : i + width] for i in range(0, len(enc), width)] or [""]
        if rng.random() < 0.3 and len(lines) > 2:
            lines[rng.randrange(1, len(lines))] += rng.choice([" word", "==", "x", "\t"])
        if rng.random() < 0.2:
            lines[0] = "key: " + lines[0][rng.randint(0, max(0, len(lines[0]) - 1)):]
        nl = "\r\n" if rng.random() < 0.2 else "\n"
        out.append(indent + (nl + indent).join(lines) + rng.choice([nl, "", " ", "=" + nl]))
        out.append(rng.choice(["", "NotImplementedError getResponseHeaders\n", "x = 1\n", "\n"]))
    return "".join(out).encode()


@pytest.mark.parametrize("seed", range(3))
def test_wrapped_blocks_are_the_lines_the_python_walk_finds(seed: int, module: object) -> None:
    # For every run of the alphabet (and for runs cut anywhere), the lines the compiled walk
    # follows are `wrapped_py`'s, or both say no block starts there.
    rng = random.Random(seed)
    blocks_seen = 0
    for _ in range(40):
        buf = blocks(rng)
        runs = [(m.start(), m.end()) for m in b64.run_re().finditer(buf)]
        runs += [(a, rng.randint(a, len(buf))) for a in rng.sample(range(len(buf) + 1),
                                                                    min(20, len(buf) + 1))]
        for a, b in runs:
            for limit in (4 * 1024 * 1024, 100):
                want = b64.wrapped_py(buf, a, b, limit)
                pairs = module.wrapped_lines(buf, a, b, limit)
                got = None if pairs is None else [
                    tuple(p) for p in np.frombuffer(pairs, dtype=np.int32).reshape(-1, 2).tolist()]
                assert got == want, (buf[a : b + 200], a, b, limit)
                blocks_seen += want is not None
    assert blocks_seen


def test_wrapped_blocks_refuse_runs_outside_the_text(module: object) -> None:
    for a, b in ((-1, 2), (3, 2), (0, 99)):
        with pytest.raises(ValueError):
            module.wrapped_lines(b"QUJDRA==\n", a, b, 1024)
    assert module.wrapped_lines(b"", 0, 0, 1024) is None


# --------------------------------------------------------------------------- digests kept


def test_a_candidates_digest_is_kept_and_the_keeping_is_bounded(monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    # A candidate seen again takes the entries found for it the first time, without a digest;
    # past the bound the kept digests are forgotten, and candidates are looked up afresh.
    from plimsoll_ci.match import index as index_mod

    doc, _ = build_set(values=[("t", "chardet"), ("n", "3107713414")])
    ix = Scanner(parse(doc)).index
    calls: list[bytes] = []
    real = index_mod.digest
    monkeypatch.setattr(index_mod, "digest", lambda kind, canon, key: calls.append(canon)
                        or real(kind, canon, key))
    assert ix.text_ids(b"chardet") == ["t"] and ix.number_ids(b"3107713414") == ["n"]
    assert ix.text_ids(b"chardet") == ["t"] and ix.number_ids(b"3107713414") == ["n"]
    assert ix.text_ids(b"charded") == [] and calls == [b"chardet", b"3107713414", b"charded"]
    for i in range(SEEN_CANDIDATES + 5):
        assert ix.text_ids(b"word%d" % i) == []
    assert len(ix._seen_texts) <= SEEN_CANDIDATES
    assert ix.text_ids(b"chardet") == ["t"] and calls[-1] == b"chardet"  # forgotten, found again
