"""Each matching rule of docs/matching.md, with a case it must find and a case it must not."""

from __future__ import annotations

import base64
import bz2
import gzip
import json
import lzma
import zlib

import pytest
from kit.scan import SEED, make_set, scan_checked, tar_bytes, zip_bytes

from plimsoll_ci.match.classes import COMPILED_FROM

SEED_ID, DEC_ID, TEXT_ID = "seeds.txt:2", "times.txt:1", "labels.txt:1"
S = SEED.encode()


@pytest.fixture(scope="module")
def wset():
    return make_set()


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# (case id, shipped path, content, entry id expected, decode chain expected)
FOUND = [
    ("name of a file", "tracks/seed-3107713414.json", b"{}", SEED_ID, "file name"),
    ("name glued to a word", "runs/seed3107713414", b"", SEED_ID, "file name"),
    ("name of a folder", "cache/3107713414/flight.json", b"{}", SEED_ID, "folder name"),
    ("percent-encoded file name", "seed-%33107713414.json", b"x", SEED_ID,
     "file name > percent-encoding"),
    ("base64 file name", "c2VlZC0zMTA3NzEzNDE0.json", b"x", SEED_ID, "file name > base64"),
    ("folder name of a zip member", "bundle.zip", zip_bytes([("data/3107713414/a.json", b"{}")]),
     SEED_ID, "zip member data/3107713414/a.json (folder name)"),
    ("text in base64", "a.txt", base64.b64encode(b"the drone answer key!"), TEXT_ID, "base64"),
    ("text with an escaped space", "a.json", b'"Drone\\u0020Answer Key"', TEXT_ID, "escapes"),
    ("text with entity spaces", "a.html", b"Drone&nbsp;Answer&nbsp;Key", TEXT_ID,
     "html-entities"),
    ("js comment", "viewer/app.js", b"// example: seed-" + S + b".json\nload();\n", SEED_ID, ""),
    ("base64 field of json", "data/a.json",
     json.dumps({"seed": b64(b"seed=" + S)}).encode(), SEED_ID, "base64"),
    ("url-safe base64", "a.txt",
     base64.urlsafe_b64encode(b"\xfb\xff" + S + b"\xfe\xff").rstrip(b"="), SEED_ID, "base64"),
    ("gzip file", "a.json.gz", gzip.compress(b'{"seed": ' + S + b"}"), SEED_ID, "gzip"),
    ("zlib stream", "a.z", zlib.compress(b"seed " + S), SEED_ID, "zlib"),
    ("bz2 stream", "a.bz2", bz2.compress(b"seed " + S), SEED_ID, "bz2"),
    ("xz stream", "a.xz", lzma.compress(b"seed " + S + b" again " + S), SEED_ID, "xz"),
    ("hex", "a.txt", b"blob " + S.hex().encode() + b"\n", SEED_ID, "hex"),
    ("hex upper case", "a.txt", b"blob=" + S.hex().upper().encode(), SEED_ID, "hex"),
    ("percent-encoding", "a.url", b"https://x/?q=%33%31%30%37%37%31%33%34%31%34&a=1",
     SEED_ID, "percent-encoding"),
    ("\\u escapes", "a.js", b'var s = "\\u0033\\u0031077\\u00313414";', SEED_ID, "escapes"),
    ("\\x escapes", "a.py", b's = "\\x33\\x3107713414"', SEED_ID, "escapes"),
    ("html entities", "a.html", b"<td>&#51;&#x31;07713414</td>", SEED_ID, "html-entities"),
    ("hexadecimal literal", "a.c", b"int s = 0x" + format(int(SEED), "x").encode() + b";",
     SEED_ID, ""),
    ("octal literal", "a.py", b"s = 0o" + format(int(SEED), "o").encode(), SEED_ID, ""),
    ("binary literal", "a.py", b"s = 0b" + format(int(SEED), "b").encode(), SEED_ID, ""),
    ("_ separators", "a.py", b"s = 3_107_713_414", SEED_ID, ""),
    ("upper-case 0X and digits", "a.c", b"0X" + format(int(SEED), "X").encode(), SEED_ID, ""),
    ("exponent", "a.txt", b"s = 3.107713414e9", SEED_ID, ""),
    ("zip member name", "bundle.zip", zip_bytes([("tracks/seed-3107713414.json", b"{}")]),
     SEED_ID, "zip member tracks/seed-3107713414.json (file name)"),
    ("zip member content", "bundle.zip", zip_bytes([("data/a.json", b'{"s": ' + S + b"}")]),
     SEED_ID, "zip member data/a.json"),
    ("zip member > base64", "bundle.zip",
     zip_bytes([("data/a.json", json.dumps({"s": b64(S)}).encode())]),
     SEED_ID, "zip member data/a.json > base64"),
    ("tar member name", "bundle.tar", tar_bytes([("d/seed-3107713414.txt", b"x")]),
     SEED_ID, "tar member d/seed-3107713414.txt (file name)"),
    ("tar member content", "bundle.tar", tar_bytes([("d/a.txt", b"s " + S)]),
     SEED_ID, "tar member d/a.txt"),
    ("tar.gz member content", "bundle.tgz", tar_bytes([("d/a.txt", b"s " + S)], "w:gz"),
     SEED_ID, "gzip > tar member d/a.txt"),
    ("integer with a zero fraction", "a.txt", b"s = 3107713414.0;", SEED_ID, ""),
    ("integer before a file extension", "a.txt", b"see 3107713414.json", SEED_ID, ""),
    ("decimal with a signed padded exponent", "log.txt", b"v=3.15e+01", DEC_ID, ""),
    ("decimal as mm:ss", "log.txt", b"at 00:31.5", DEC_ID, ""),
    ("decimal with trailing zero", "log.txt", b"time 31.50 s", DEC_ID, ""),
    ("decimal with unit glued", "log.txt", b"t=31.5s", DEC_ID, ""),
    ("decimal as m:ss", "log.txt", b"at 0:31.5 the drone", DEC_ID, ""),
    ("decimal with exponent", "log.txt", b"v=3.15e1", DEC_ID, ""),
    ("decimal at a sentence end", "log.txt", b"it took 31.5.", DEC_ID, ""),
    ("text in other case and spacing", "README.md", b"the DRONE   answer\n\tkey is here",
     TEXT_ID, ""),
]

NOT_FOUND = [
    ("value inside a longer number", "a.txt", b"id 13107713414 ok"),
    ("value followed by a digit", "a.txt", b"id 31077134141"),
    ("value split by a space", "a.txt", b"31077 13414"),
    ("value split across a name and content", "seed-31077", b"13414"),
    ("integer with a fraction", "a.txt", b"x 3107713414.5 y"),
    ("integer as a fraction", "a.txt", b"x 1.3107713414 y"),
    ("decimal inside a dotted version", "a.txt", b"v 1.31.5"),
    ("decimal inside a longer number", "a.txt", b"x 131.5 y"),
    ("decimal with more digits", "a.txt", b"x 31.51 y"),
    ("decimal after more digits", "a.txt", b"v 2031.5"),
    ("a different m:ss", "a.txt", b"at 1:31.5"),
    ("text glued to a word", "a.txt", b"thedrone answer keys"),
    ("text with a word missing", "a.txt", b"drone key"),
    ("hex of a longer number", "a.txt", b"13107713414".hex().encode()),
    ("zip member with a longer number", "b.zip", zip_bytes([("seed-13107713414.json", b"1")])),
]


# Small buffers take the pure-Python passes, large ones the compiled passes (where they are
# built): both must hold every rule. Each side of a "large" case alone is past
# classes.COMPILED_FROM, so the compiled passes run
FILLER = b"a line of filler text, 12 words and 0.5 numbers 1_0 0x1 e5 :30\n" \
    * (COMPILED_FROM // 64 + 1)
BINARY = ("gzip", "zlib", "bz2", "xz", "zip", "tar", "file name", "folder name")


def _sized(data: bytes, chain: str, size: str) -> bytes:
    if size == "large" and not any(k in chain for k in BINARY) and not data.startswith(b"\0"):
        return FILLER + data + b"\n" + FILLER
    return data


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize(("path", "data", "entry", "chain"),
                         [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_a_withheld_value_is_found(wset, leak, path, data, entry, chain, size):
    data = _sized(data, chain, size)
    pass  # names that carry a value are redacted: nothing to allow
    result = scan_checked([(path, data)], wset, leak)
    # one leak seen several ways is one finding listing each (`via`)
    hits = [(f.entry, c) for f in result.findings for c in (f.via or (f.chain,))]
    # A name that carries a value may be shown redacted in chains and paths (never the value).
    assert (entry, chain) in hits or (entry, chain.replace(SEED, "[withheld]")) in hits


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize(("path", "data"), [c[1:] for c in NOT_FOUND],
                         ids=[c[0] for c in NOT_FOUND])
def test_a_value_that_is_not_a_whole_token_is_not_found(wset, leak, path, data, size):
    data = _sized(data, "zip" if path.endswith(".zip") else "", size)
    result = scan_checked([(path, data)], wset, leak)
    assert result.findings == []


def test_a_finding_gives_line_and_column_of_the_value(wset, leak):
    data = b"first line\n  // seed " + S + b"\n"
    result = scan_checked([("a.js", data)], wset, leak)
    [f] = result.findings
    assert (f.path, f.line, f.column, f.kind, f.where) == ("a.js", 2, 11, "value", "content")


def test_a_finding_in_binary_content_gives_the_byte_offset(wset, leak):
    data = b"\0\1\2" + b"seed " + S + b"\0"
    result = scan_checked([("a.bin", data)], wset, leak)
    [f] = result.findings
    assert (f.line, f.column) == (0, 8)


def test_a_value_in_the_name_and_the_content_is_two_findings(wset, leak):
    result = scan_checked([(f"seed-{SEED}.txt", b"seed " + S)], wset, leak)
    assert sorted(f.where for f in result.findings) == ["content", "name"]


def test_a_folder_name_is_reported_once_for_all_its_files(wset, leak):
    items = [(f"runs/{SEED}/a.json", b"{}"), (f"runs/{SEED}/b.json", b"{}")]
    result = scan_checked(items, wset, leak)
    folders = [f for f in result.findings if f.chain == "folder name"]
    assert len(folders) == 1 and folders[0].path in (f"runs/{SEED}/", "runs/[withheld]/")


@pytest.mark.parametrize("size", ["small", "large"])
def test_text_is_found_across_a_non_breaking_space(wset, leak, size):
    data = _sized("the drone\u00a0answer key".encode(), "", size)
    result = scan_checked([("a.txt", data)], wset, leak)
    assert [f.entry for f in result.findings] == [TEXT_ID]


@pytest.mark.parametrize("gap", ["\t", "\n", "\r"], ids=["tab", "line feed", "carriage return"])
@pytest.mark.parametrize("size", ["small", "large"])
def test_text_is_found_across_one_tab_or_line_break(wset, leak, gap, size):
    data = _sized(f"the drone{gap}answer key".encode(), "", size)
    result = scan_checked([("a.txt", data)], wset, leak)
    assert [f.entry for f in result.findings] == [TEXT_ID]


@pytest.mark.parametrize("spelling", [b"315e-1", b"3150e-2"],
                         ids=["e-1", "e-2"])
@pytest.mark.parametrize("size", ["small", "large"])
def test_a_number_with_a_signed_exponent_is_found(wset, leak, spelling, size):
    data = _sized(b"v = " + spelling + b";", "", size)
    result = scan_checked([("a.txt", data)], wset, leak)
    assert [f.entry for f in result.findings] == [DEC_ID]
