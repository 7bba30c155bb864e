"""Text forms of docs/matching.md: line-wrapped base64 (GNU 76 columns, PEM 64, CRLF, indented),
decoded as one region, and UTF-16 / UTF-32 text, decoded and searched like any text."""

from __future__ import annotations

import base64

import pytest
from kit.scan import SEED, make_set, scan_checked

from plimsoll_ci.match.classes import COMPILED_FROM
from plimsoll_ci.shipscan.scan import Limits

S = SEED.encode()
SEED_ID, TEXT_ID = "seeds.txt:2", "labels.txt:1"
FILLER = b"filler line with words, 17 numbers 0.25 and x_y ok\n" \
    * (COMPILED_FROM // 51 + 1)


@pytest.fixture(scope="module")
def wset():
    return make_set()


def wrapped(raw: bytes, width: int = 76, eol: bytes = b"\n", indent: bytes = b"") -> bytes:
    enc = base64.b64encode(raw)
    return b"".join(indent + enc[i : i + width] + eol for i in range(0, len(enc), width))


def straddling(width: int) -> bytes:
    """Raw bytes whose seed is cut by the first line break of `width`-column base64."""
    cut = width // 4 * 3  # raw bytes on one line
    raw = b"x" * (cut - 10) + b" seed " + S + b" and more text after it. " * 3
    start = raw.index(S)
    assert start < cut < start + len(S)
    return raw


WRAPS = [
    ("GNU base64, 76 columns", wrapped(straddling(76))),
    ("GNU base64 of a long file", wrapped(b"y" * 57 * 50 + straddling(76))),
    ("PEM, 64 columns", b"-----BEGIN DATA-----\n" + wrapped(straddling(64), 64)
     + b"-----END DATA-----\n"),
    ("CRLF line breaks", wrapped(straddling(76), eol=b"\r\n")),
    ("indented YAML block", b"data: |\n" + wrapped(straddling(76), indent=b"    ") + b"k: 1\n"),
    ("after a key on the first line", b"data: " + wrapped(straddling(76))[:-1] + b"\nnext\n"),
    ("short last line with padding", wrapped(b"z" * 50 + b" seed " + S + b"!" * 16)),
]


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("data", [w[1] for w in WRAPS], ids=[w[0] for w in WRAPS])
def test_a_value_that_straddles_a_line_break_of_wrapped_base64_is_found(wset, leak, data, size):
    if size == "large":
        data = FILLER + data + FILLER
    result = scan_checked([("a.txt", data)], wset, leak)
    assert (SEED_ID, "base64") in [(f.entry, f.chain) for f in result.findings]


def test_a_value_in_a_wrapped_block_is_placed_at_the_line_its_encoding_starts_on(wset, leak):
    raw = b"w" * 57 * 2 + straddling(76) + b"seed " + S + b" " + b"v" * 150
    data = b"head\n" + wrapped(raw)
    result = scan_checked([("a.txt", data)], wset, leak)
    # the copy across the break of lines 3 and 4 of the block (lines 4 and 5 of the file) is
    # placed on the first of them; the copy inside one line is found once, at that line
    inside = (raw.index(S, raw.index(S) + 1) * 4 // 3) // 76 + 2
    assert [(f.entry, f.line, f.column, f.chain) for f in result.findings] == [
        (SEED_ID, 4, 1, "base64"), (SEED_ID, inside, 1, "base64")]


def test_a_wrapped_block_over_the_region_bound_is_noted(wset, leak):
    data = wrapped(b"q" * 3000 + straddling(76))
    result = scan_checked([("a.txt", data)], wset, leak, Limits(max_region=1000))
    assert not [f for f in result.findings if f.chain == "base64" and f.entry == SEED_ID]
    assert any("a.txt: base64 region at byte 0" in n and "1000-byte" in n
               for n in result.notes), result.notes


def test_a_short_first_line_with_nothing_before_it_does_not_start_a_block(wset, leak):
    raw = b"x" * 36 + b" seed " + S + b" and more text after it. " * 4
    enc = base64.b64encode(raw)
    assert raw.index(S) < 45 < raw.index(S) + len(S)  # the seed crosses the first line break
    data = enc[:60] + b"\n" + enc[60:136] + b"\n" + enc[136:] + b"\n"
    result = scan_checked([("a.txt", data)], wset, leak)
    assert (SEED_ID, "base64") not in [(f.entry, f.chain) for f in result.findings]


def test_lines_of_a_width_no_base64_tool_writes_are_not_one_block(wset, leak):
    raw = straddling(76)
    enc = base64.b64encode(raw)
    data = b"\n".join(enc[i : i + 50] for i in range(0, len(enc), 50)) + b"\n"
    result = scan_checked([("a.txt", data)], wset, leak)
    assert (SEED_ID, "base64") not in [(f.entry, f.chain) for f in result.findings]


# --- UTF-16 and UTF-32 -----------------------------------------------------------------------

TEXT = "first line\nthe seed is " + SEED + " and the drone answer key\n"
UTFS = [
    ("UTF-16 with a byte-order mark", TEXT.encode("utf-16"), "utf-16le"),
    ("UTF-16 big-endian with a mark", b"\xfe\xff" + TEXT.encode("utf-16-be"), "utf-16be"),
    ("UTF-16 little-endian, no mark", TEXT.encode("utf-16-le"), "utf-16le"),
    ("UTF-16 big-endian, no mark", TEXT.encode("utf-16-be"), "utf-16be"),
    ("UTF-32 with a byte-order mark", TEXT.encode("utf-32"), "utf-32le"),
    ("UTF-32 big-endian, no mark", TEXT.encode("utf-32-be"), "utf-32be"),
]


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize(("data", "chain"), [u[1:] for u in UTFS], ids=[u[0] for u in UTFS])
def test_utf16_and_utf32_text_is_decoded_and_searched(wset, leak, data, chain, size):
    if size == "large":
        enc = chain.replace("le", "-le").replace("be", "-be")
        data = data + (FILLER.decode() * 2).encode(enc)
    result = scan_checked([("notes.txt", data)], wset, leak)
    found = {(f.entry, f.chain, f.line, f.column) for f in result.findings}
    assert (SEED_ID, chain, 2, 13) in found
    assert (TEXT_ID, chain, 2, 32) in found


def test_utf16_json_has_one_text_disguise_undone(wset, leak):
    doc = '{"seed": "' + base64.b64encode(b"seed " + S).decode() + '"}\n'
    result = scan_checked([("a.json", doc.encode("utf-16"))], wset, leak)
    assert [(f.entry, f.chain) for f in result.findings] == [(SEED_ID, "utf-16le > base64")]


def test_utf16_inside_an_archive_member_is_decoded(wset, leak):
    from kit.scan import zip_bytes

    data = zip_bytes([("notes.txt", TEXT.encode("utf-16"))])
    result = scan_checked([("a.zip", data)], wset, leak)
    assert (SEED_ID, "zip member notes.txt > utf-16le") in [(f.entry, f.chain)
                                                           for f in result.findings]


def test_binary_with_scattered_zero_bytes_is_not_read_as_utf16(wset, leak):
    data = bytes(range(256)) * 64 + b"seed " + S
    result = scan_checked([("a.bin", data)], wset, leak)
    assert [f.chain for f in result.findings] == [""]
