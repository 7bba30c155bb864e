"""Batching pieces for speed never changes what the tripwire finds (an invariant, fuzzed)."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from plimsoll_ci.engine import Scanner
from plimsoll_ci.shipscan import scan
from plimsoll_ci.tripwire import matching
from plimsoll_ci.tripwire.reader import Piece
from plimsoll_ci.withheld import build_set, parse

VALUES = [("t", "31.5"), ("w", "quorvantile"), ("p", "gate seven left"), ("s", "3107713414")]
WSET = parse(build_set(values=VALUES, files=[("f", b"the whole file")],
                       tag="plimsoll-sealed/1")[0])

FRAGMENTS = ["31.5", "t=31.50s", "0:31.5", "131.5", "QUORVANTILE", "quorvantiles", "gate",
             "seven", "left", "gate  seven\nleft", "3107713414", "seed-3107713414.json", " ",
             "\n", "x", "é", "%33%31%2e%35", base64.b64encode(b"quorvantile").decode(),
             "the whole file", "\x1e", "-", ":", "."]
TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join)
PIECE = st.tuples(st.sampled_from(["a.json", "b.json", "c/d.json"]),
                  st.sampled_from(["/x", "/y/0", "header X", "file name"]),
                  TEXT, st.sampled_from(["text", "text", "name"]))


def _naive(pieces: list[Piece]) -> set:
    scanner = Scanner(WSET)
    out = set()
    for p in pieces:
        if p.kind == "name":
            found = scanner.scan_name(p.data.decode())
        else:
            found = scanner.scan_content(p.data, p.source)[0]
        out |= {(p.source, p.place, f.entry, f.kind) for f in found}
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(PIECE, max_size=12), st.sampled_from([16, 256 * 1024]))
def test_batched_scan_finds_exactly_what_one_scan_per_piece_finds(raw, batch_bytes):
    scan.BATCH_BYTES, saved = batch_bytes, scan.BATCH_BYTES
    try:
        _check(raw)
    finally:
        scan.BATCH_BYTES = saved


def _check(raw) -> None:
    pieces = [Piece(src, place, text.encode(), kind) for src, place, text, kind in raw]
    findings, _notes = matching.find(pieces, WSET)  # places not redacted
    got = set()
    for f in findings:
        place = next(p.place for p in pieces
                     if p.source == f.path and f.chain.startswith(p.place))
        got.add((f.path, place, f.entry, f.kind))
    assert got == _naive(pieces)
