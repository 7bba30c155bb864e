"""The answer-key tripwire: find sealed values in what a harness sent a model.

A sealed set is a withheld set with the tag `plimsoll-sealed/1` (digests only; keyed or plain).
`scan_requests` reads every recorded request under a folder (`plimsoll_ci.requests_reader`) and
hands each piece to the one matching engine (`plimsoll_ci.scan.Scanner`), so the rules are the
ship scan's: whole token runs in any capitalization, numbers however written, files by SHA-256,
names of files and folders, one layer of encoding undone.

A finding's `path` is the recorded file, its `chain` starts with the place inside it (a JSON
pointer, `part NAME`, `header NAME`, `target`) followed by the engine's decode chain; `line` and
`column` count inside that piece. Its `entry` is the sealed id. It never holds the value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from plimsoll_ci.errors import BadInput
from plimsoll_ci.requests_reader import Piece, ReadLimits, RequestReader

SEALED_TAG = "plimsoll-sealed/1"


def load_sealed(path: str, key: bytes | None = None):
    """A sealed set from a sealed-set file, a withheld-set file, or a canary file."""
    from plimsoll_ci import canary, withheld

    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        raise BadInput(f"--sealed {path}: cannot read ({e.strerror}); "
                       "make one with `plimsoll-ci sealed build`") from None
    if canary.FORMAT.encode() in head:
        try:
            is_canary = json.loads(open(path, "rb").read()).get("format") == canary.FORMAT
        except (ValueError, AttributeError, UnicodeDecodeError):
            is_canary = False
        if is_canary:
            return canary.marker_set(canary.load(path))
    return withheld.load(path, key=key)


def _join(place: str, chain: str) -> str:
    if place and chain:
        return f"{place} > {chain}"
    return place or chain


def scan_pieces(pieces: Iterable[Piece], scanner) -> tuple[list, list[str]]:
    """Findings (path = recorded file, chain = place > decode chain) and notes for `pieces`."""
    findings = []
    notes: list[str] = []
    seen = set()
    for piece in pieces:
        if piece.kind == "name":
            got = scanner.scan_name(piece.data.decode("utf-8", "replace"))
            piece_notes: list[str] = []
        else:
            got, piece_notes = scanner.scan_content(piece.data, piece.source)
        for n in piece_notes:
            notes.append(f"{piece.source} {piece.place}: {n}" if piece.place else n)
        for f in got:
            place = "" if piece.kind == "name" else piece.place
            f = f._replace(path=piece.source, chain=_join(place, f.chain))
            # the same value at the same place may be found twice (as a decoded base64 file and
            # by the engine's own base64 layer); say it once
            key = (f.path, piece.place.split(" (base64", 1)[0], f.entry, f.where)
            if key in seen:
                continue
            seen.add(key)
            findings.append(f)
    return findings, notes


def scan_requests(root: str, wset, limits=None, read_limits: ReadLimits | None = None):
    """Scan every recorded request under `root` against a sealed set -> `ScanResult`."""
    from plimsoll_ci.scan import Scanner, ScanResult

    scanner = Scanner(wset, limits)
    reader = RequestReader(read_limits)
    findings, notes = scan_pieces(reader.read(root), scanner)
    return ScanResult(findings, reader.notes + notes, reader.files, reader.bytes)
