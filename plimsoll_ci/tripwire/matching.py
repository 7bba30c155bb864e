"""Pieces of recorded requests -> findings, through the ship scan's front end.

The only module of the tripwire that scans: every piece goes through a `plimsoll_ci.shipscan.scan.Verdicts`
session (the ship scan's batching, cache, file bound and engine), a text or file piece as a
content, a name piece as a shipped name. Recorded requests repeat themselves (an agent loop
re-sends its system prompt, task and history with every turn), so the session keeps verdicts in a
`MemoryCache`: a repeat is not scanned again. What differs from a ship scan is where a verdict is
placed: at the piece's recorded file and its place in the request (`_Pieces`). A finding's `path`
is the recorded file and its `chain` is the piece's place followed by the engine's decode chain;
`line` and `column` count inside the piece. Paths and places are not redacted here
(`plimsoll_ci.shipscan.redact` does that for printing).

Source entries are fingerprinted over a whole request (a pasted copy spans many strings): the text
pieces of one recorded file are joined and scanned, through a second session, against the source
entries alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from plimsoll_ci.engine import Finding, Limits
from plimsoll_ci.shipscan.results import Verdict
from plimsoll_ci.shipscan.scan import Item, MemoryCache, Verdicts
from plimsoll_ci.tripwire.reader import Piece, join_place
from plimsoll_ci.withheld import WithheldSet

# A request breaks into many small strings: the engine's work arrays stay small (and its cost per
# byte low) in joined batches of this size, smaller than a ship scan's.
_BATCH_BYTES = 256 * 1024
_BASE64_BOUND = re.compile(r"base64 region at byte \d+ is \d+ bytes, over the")


def find(pieces: Iterable[Piece], wset: WithheldSet,
         limits: Limits | None = None) -> tuple[list[Finding], list[str]]:
    """Findings (path = recorded file, chain = place > decode chain) and notes for `pieces`.

    Batching and the cache never change what is found (a fuzzed test holds this).
    """
    sources = [e for e in wset.entries if e.kind == "source"]
    placed = _Pieces()
    values = Verdicts(placed, wset._replace(entries=[e for e in wset.entries
                                                     if e.kind != "source"]) if sources else wset,
                      limits, MemoryCache())
    whole = _Requests(Verdicts(placed.sources, wset._replace(entries=sources), limits,
                               MemoryCache())) if sources else None
    values.batch_bytes = min(values.batch_bytes, _BATCH_BYTES)
    for n, piece in enumerate(pieces):
        label = str(n)
        placed.pieces[label] = piece
        if whole is not None and piece.kind != "name":
            whole.add(piece)
        if piece.kind == "name":
            values.add_name(label, piece.data.decode("utf-8", "replace"))
        else:
            values.add(Item(label, piece.data, ""))
    values.flush()
    if whole is not None:
        whole.finish()
    return placed.findings, placed.notes + values.notes


class _Pieces:
    """Places verdicts at the pieces they were asked for: the recorded file, the place in it."""

    def __init__(self) -> None:
        self.pieces: dict[str, Piece] = {}  # label -> the piece, until its verdict is placed
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.seen: set[tuple] = set()
        self.sources = _SourceHits(self.findings)

    def content(self, label: str, key: str, verdict: Verdict) -> None:
        """A text or file piece's verdict."""
        piece = self.pieces.pop(label)
        notes = verdict.notes
        if notes and piece.covered:
            # the reader decoded this base64 whole: the engine's note that it did not is moot
            notes = tuple(n for n in notes if not _BASE64_BOUND.match(n))
        self.notes += [f"{piece.source} {piece.place}: {n}" if piece.place else
                       f"{piece.source}: {n}" for n in notes]
        self._place(piece, verdict.findings)

    def name(self, label: str, shipped: str, verdict: Verdict) -> None:
        """A name piece's verdict: the piece's place says what kind of name it was."""
        # a lone name is scanned as a file name: its chain starts with "file name"
        self._place(self.pieces.pop(label), [
            f._replace(chain=f.chain.split(" > ", 1)[1] if " > " in f.chain else "")
            for f in verdict.findings])

    def _place(self, piece: Piece, rels: Iterable[Finding]) -> None:
        for rel in rels:
            f = rel._replace(path=piece.source, chain=join_place(piece.place, rel.chain))
            # the same value at the same place may be found twice (as a decoded base64 file and
            # by the engine's own base64 layer); say it once
            k = (f.path, piece.place.split(" (base64", 1)[0], f.entry, f.where, f.kind)
            if k in self.seen:
                continue
            self.seen.add(k)
            self.findings.append(f)


class _SourceHits:
    """Places the source findings of a whole request's joined text at its recorded file."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings

    def content(self, label: str, key: str, verdict: Verdict) -> None:
        """A request's verdict against the source entries (its notes are the pieces' own)."""
        self.findings += [f._replace(path=label) for f in verdict.findings if f.kind == "source"]

    def name(self, label: str, shipped: str, verdict: Verdict) -> None:
        """Never asked for: a request's joined text ships no name."""


class _Requests:
    """Joins the text pieces of each recorded file, and scans each join for source entries."""

    def __init__(self, session: Verdicts) -> None:
        self.session = session
        self.source = ""
        self.text: list[bytes] = []

    def add(self, piece: Piece) -> None:
        """One more piece of the current request (a piece of another file ends it)."""
        if piece.source != self.source:
            self._end()
            self.source = piece.source
        if b"\0" not in piece.data[:8192]:
            self.text.append(piece.data)

    def _end(self) -> None:
        if self.text:
            self.session.add(Item(self.source, b"\n".join(self.text), ""))
        self.text = []

    def finish(self) -> None:
        """The last request, and everything queued."""
        self._end()
        self.session.flush()

