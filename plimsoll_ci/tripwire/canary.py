"""Canary runs: made-up markers planted where a harness keeps its secrets, to test the harness.

`make` draws one marker per hiding place, shaped like what hides there (a word for a truth label,
a number for a seed, a clock time for a reference step time, a file name for a planted clip). The
canary file holds the markers themselves (they are made up, not secrets) and a sealed set of their
digests, so the tripwire can read it as it reads any sealed set.

`check` passes only when every marker is found in the planted tree (the harness really put it
where secrets live) and none is found in any recorded request (the harness kept it from the model).
Output names markers by their place, never by the marker: a report stays publishable as a habit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable
from typing import NamedTuple

from plimsoll_ci.engine import Scanner
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import MiB, read_bounded
from plimsoll_ci.shipscan.scan import scan_items
from plimsoll_ci.tripwire.formats import CANARY_FORMAT
from plimsoll_ci.tripwire.requests import scan_requests
from plimsoll_ci.withheld import SEALED_FORMAT, WithheldSet, build_set, parse

MAX_CANARY_BYTES = 64 * MiB  # a canary file `make` wrote: its markers and their sealed set
MAX_PLANTED_BYTES = 64 * MiB  # one file of the planted tree (seed files, a generator's source)

KINDS = ("word", "number", "time", "filename")
_PLACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


class Marker(NamedTuple):
    """One canary marker: its id is its place's name."""

    place: str
    kind: str
    marker: str


def guess_kind(place: str) -> str:
    """The kind a place's name suggests: times, numbers (seeds), file names, else words."""
    words = [w for w in re.split(r"[^a-z0-9]+", place.lower()) if w]

    def has(*stems: str) -> bool:
        return any(w.startswith(s) for w in words for s in stems)

    if has("time", "clock", "step", "duration", "lap", "split"):
        return "time"
    if has("seed", "number", "num", "count", "id", "score"):
        return "number"
    if has("clip", "file", "name", "upload", "video", "image", "path", "asset"):
        return "filename"
    return "word"


def _word(syllables: int = 5) -> str:
    # consonant-vowel syllables read like a label but are not a dictionary word (70**5 ~ 1.7e9)
    return "".join(secrets.choice(_CONSONANTS) + secrets.choice(_VOWELS) for _ in range(syllables))


def make_marker(kind: str) -> str:
    """A fresh marker of `kind`, drawn from the operating system's randomness."""
    if kind == "word":
        return _word()
    if kind == "number":
        # ten digits, like a 32-bit seed; never a small number anyone would try first
        return str(1_000_000_000 + secrets.randbelow(3_000_000_000))
    if kind == "time":
        # m:ss.fff, like a reference step time; the last digit is not 0 so the spelling is canonical
        minutes, seconds = 1 + secrets.randbelow(9), secrets.randbelow(60)
        millis = 1 + secrets.randbelow(999)
        while millis % 10 == 0:
            millis = 1 + secrets.randbelow(999)
        return f"{minutes}:{seconds:02d}.{millis:03d}"
    if kind == "filename":
        return f"{_word(3)}-{_word(2)}-{1 + secrets.randbelow(9)}.mp4"
    raise BadInput(f"--kind: unknown kind {kind!r}; use one of {', '.join(KINDS)}")


def parse_kinds(specs: list[str], places: list[str]) -> dict[str, str]:
    """`--kind PLACE=KIND` flags (repeatable, or comma-separated) -> {place: kind}."""
    kinds: dict[str, str] = {}
    for spec in specs:
        for item in filter(None, (s.strip() for s in spec.split(","))):
            place, eq, kind = item.partition("=")
            if not eq or kind not in KINDS:
                raise BadInput(f"--kind {item!r}: write PLACE=KIND with KIND one of "
                               f"{', '.join(KINDS)}")
            if place not in places:
                raise BadInput(f"--kind {item!r}: {place!r} is not one of the places given "
                               f"({', '.join(places)})")
            kinds[place] = kind
    return kinds


def make(places: list[str], kinds: dict[str, str] | None = None) -> tuple[dict, list[Marker]]:
    """The canary document for `places` (and its markers)."""
    if not places:
        raise BadInput("canary make: name at least one hiding place, e.g. truth-labels step-times")
    seen = set()
    for p in places:
        if not _PLACE_RE.fullmatch(p):
            raise BadInput(f"place {p!r}: use letters, digits, '.', '_' and '-' (at most 64), "
                           "e.g. truth-labels")
        if p in seen:
            raise BadInput(f"place {p!r} is given twice; name each hiding place once")
        seen.add(p)
    kinds = kinds or {}
    markers = [Marker(p, kinds.get(p) or guess_kind(p), "") for p in places]
    markers = [m._replace(marker=make_marker(m.kind)) for m in markers]
    # markers are public, so the set is unkeyed; build_set's warning about guessable unkeyed
    # values does not apply to made-up markers
    sealed, _warnings = build_set(values=[(m.place, m.marker) for m in markers],
                                  tag=SEALED_FORMAT)
    doc = {
        "format": CANARY_FORMAT,
        "about": "made-up canary markers (not secrets); plant each in its place, then run "
                 "`plimsoll-ci canary check`",
        "markers": [m._asdict() for m in markers],
        "set": sealed,
    }
    return doc, markers


def dumps(doc: dict) -> str:
    """The canary file's bytes, as `make` writes them."""
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


class Canary(NamedTuple):
    """A loaded canary file."""

    path: str
    markers: list[Marker]
    set_doc: dict
    sha256: str


def load(path: str) -> Canary:
    """Read a canary file; BadInput (exit 2) when it is not one `make` wrote."""
    # bounded, a regular file only (a FIFO given as the canary file blocked the check)
    raw = read_bounded(path, MAX_CANARY_BYTES, f"canary file {path}")
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInput(f"canary file {path}: not JSON ({e}); "
                       "make one with `plimsoll-ci canary make`") from None
    if not isinstance(doc, dict) or doc.get("format") != CANARY_FORMAT:
        raise BadInput(f"canary file {path}: format is not {CANARY_FORMAT!r}; "
                       "make one with `plimsoll-ci canary make`")
    problems = []
    markers = []
    items = doc.get("markers")
    if not isinstance(items, list) or not items:
        problems.append("\"markers\" is missing or empty")
        items = []
    for i, m in enumerate(items):
        if not (isinstance(m, dict) and isinstance(m.get("place"), str) and
                m.get("kind") in KINDS and isinstance(m.get("marker"), str) and m["marker"]):
            problems.append(f"markers[{i}]: needs place, kind ({'/'.join(KINDS)}) and marker")
            continue
        markers.append(Marker(m["place"], m["kind"], m["marker"]))
    if not isinstance(doc.get("set"), dict):
        problems.append("\"set\" (the markers' digests) is missing")
    if problems:
        raise BadInput(f"canary file {path}: " + "; ".join(problems))
    return Canary(path, markers, doc["set"], hashlib.sha256(raw).hexdigest())


def marker_set(canary: Canary) -> WithheldSet:
    """The canary's sealed set, checked against its markers (an edited file is refused)."""
    wset = parse(canary.set_doc, origin=canary.path)
    ids = {e.id for e in wset.entries}
    wanted = {m.place for m in canary.markers}
    if ids != wanted:
        raise BadInput(f"canary file {canary.path}: the digests' ids do not match the markers' "
                       "places; make a fresh canary file")
    scanner = Scanner(wset)
    for m in canary.markers:
        hits = {f.entry for f in scanner.scan_text(m.marker, "<marker>")}
        if m.place not in hits:
            raise BadInput(f"canary file {canary.path}: marker {m.place!r} does not match its "
                           "digest (the file was edited); make a fresh canary file")
    return wset


class MarkerVerdict(NamedTuple):
    """What `check` found for one marker."""

    place: str
    kind: str
    planted: list[str]  # where it was found in the planted tree ("file:line:col")
    leaked: list[str]  # where it was found in the requests ("file place")

    @property
    def ok(self) -> bool:
        return bool(self.planted) and not self.leaked


class CheckResult(NamedTuple):
    """The verdicts of a canary check, and notes (bounds hit, unreadable files)."""

    verdicts: list[MarkerVerdict]
    notes: list[str]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)


def _planted_items(root: str, skip_sha256: str):
    """(relative path, bytes) of every file under the planted tree, minus the canary file."""
    walk: Iterable[tuple[str, list[str], list[str]]]
    given = os.path.isfile(root)  # a file named on the command line is read as named
    if given:
        walk = [(os.path.dirname(root) or ".", [], [os.path.basename(root)])]
        base = os.path.dirname(root) or "."
    else:
        walk = os.walk(root)
        base = root
    for folder, dirs, files in walk:
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(folder, f)
            try:
                mode = (os.stat if given else os.lstat)(path).st_mode
            except OSError:
                continue
            if not stat.S_ISREG(mode):
                # a link is not followed out of the tree, a FIFO or device never read: a marker
                # only there is not planted (the check then fails, never passes wrongly)
                continue
            data = read_bounded(path, MAX_PLANTED_BYTES, f"--planted file {path}",
                                follow=given)
            # the canary file itself holds every marker; finding markers there proves nothing
            if hashlib.sha256(data).hexdigest() == skip_sha256:
                continue
            yield os.path.relpath(path, base).replace(os.sep, "/"), data


def check(canary: Canary, planted: str, requests: str) -> CheckResult:
    """Every marker must be in the planted tree and in no request."""
    if not os.path.exists(planted):
        raise BadInput(f"--planted {planted}: no such file or folder; give the folder the "
                       "harness planted its markers in")
    wset = marker_set(canary)
    planted_result = scan_items(_planted_items(planted, canary.sha256), wset)
    req_result = scan_requests(requests, wset)
    where_planted: dict[str, list[str]] = {}
    for f in planted_result.findings:
        if f.kind == "withheld-set":
            continue
        # (paths and chains come redacted from the ship scan)
        spot = f"{f.path}:{f.line}:{f.column}" if f.where == "content" else \
            f"{f.path} ({f.chain.split(' > ', 1)[0] or 'name'})"
        where_planted.setdefault(f.entry, []).append(spot)
    where_leaked: dict[str, list[str]] = {}
    for f in req_result.findings:
        where_leaked.setdefault(f.entry, []).append(f"{f.path} {f.chain}".rstrip())
    verdicts = [MarkerVerdict(m.place, m.kind, where_planted.get(m.place, []),
                              where_leaked.get(m.place, [])) for m in canary.markers]
    return CheckResult(verdicts, list(planted_result.notes) + list(req_result.notes))

