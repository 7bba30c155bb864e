"""Baselines: findings already dealt with (a rotated value, an accepted window), by entry id and
digest, never by value.

A baseline file is JSON with a format tag, one entry a line as `write` writes it:

    {"format": "plimsoll-baseline/1", "entries": [
      {"entry": "seeds.txt:2", "digest": "9f2c...", "reason": "rotated 2026-12-01", "date": "2026-12-01"},
      {"entry": "seeds.txt:5", "digest": "03ab...", "path": "viewer/replay.html", "reason": "...", "date": "..."}
    ]}

`digest` is the withheld entry's own digest (HMAC-SHA-256 for a keyed set), so an entry id that
is reused for a new value (a rotation rebuilds the set) no longer matches: the new value is found
again. With `path`, only findings in that shipped file are baselined. A finding that a baseline
entry matches is not counted (it fails nothing) and is reported as baselined; an entry that
matches no finding is reported as stale, so a baseline does not outlive what it was written for.
The scan, the hook, the action and `history` share this one filter (`split`, `notes`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import read_bounded
from plimsoll_ci.shipscan.results import ScanResult
from plimsoll_ci.shipscan.scan import Finding

FORMAT = "plimsoll-baseline/1"
MAX_BYTES = 16 * 1024 * 1024  # a baseline is a list of ids and digests; 16 MiB is ~100k entries
FIELDS = ("entry", "digest", "path", "reason", "date")


class Entry(NamedTuple):
    """One finding already dealt with: which withheld entry (id and digest), optionally where,
    why and when; `line` is where it sits in its file (for messages)."""

    entry: str
    digest: str
    reason: str
    date: str
    path: str | None = None
    line: int = 0


class Baseline(NamedTuple):
    """A loaded baseline file."""

    origin: str
    entries: list[Entry]


def entry_digest(e: Any) -> str | None:
    """The digest that names a withheld entry: its own digest (a value or a file), or the SHA-256
    of its sorted fingerprints (a source); None for an entry with neither."""
    if e.digest:
        return str(e.digest)
    if e.fingerprints:
        joined = ",".join(sorted(str(f) for f in e.fingerprints))
        return hashlib.sha256(joined.encode()).hexdigest()
    return None


def _digests(wset: Any) -> dict[str, str]:
    """Entry id -> digest over a withheld set (a shipped withheld set's finding names no entry of
    the set, so it is never baselined: it must not ship at all)."""
    return {e.id: d for e in wset.entries if (d := entry_digest(e))}


# --------------------------------------------------------------------------- reading


def _entry_lines(text: str) -> list[int]:
    """The line on which each element of the `entries` array starts ([] when it cannot be told:
    messages then name the entry by its number only)."""
    at = text.find('"entries"')
    at = text.find("[", at) + 1 if at >= 0 else 0
    if at <= 0:
        return []
    decoder = json.JSONDecoder()
    lines: list[int] = []
    try:
        while True:
            while at < len(text) and text[at] in " \t\r\n,":
                at += 1
            if at >= len(text) or text[at] == "]":
                return lines
            lines.append(text.count("\n", 0, at) + 1)
            _, at = decoder.raw_decode(text, at)
    except ValueError:
        return []


def load(path: str | os.PathLike[str], shown_as: str | None = None) -> Baseline:
    """Read and check a baseline file; `BadInput` (exit 2) naming the file (`shown_as`, else
    `path`) and the line of the first problem, and what to do."""
    origin = shown_as or os.fspath(path)
    name = f"baseline {origin}"
    raw = read_bounded(path, MAX_BYTES, name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise BadInput(f"{name} line {line}: not UTF-8 text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{name} line {e.lineno}: not valid JSON ({e.msg}); write it with "
                       "`plimsoll-ci baseline`") from None
    except RecursionError:
        raise BadInput(f"{name}: nested too deeply to be a baseline") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise BadInput(f"{name} line 1: format is {found!r}, expected {FORMAT!r} (a file "
                       "written by `plimsoll-ci baseline`)")
    items = doc.get("entries")
    if not isinstance(items, list):
        raise BadInput(f"{name} line 1: no `entries` list")
    lines = _entry_lines(text)
    entries = []
    for i, item in enumerate(items):
        line = lines[i] if i < len(lines) else 0
        where = f"{name} line {line}" if line else f"{name} entry {i + 1}"
        entries.append(_entry(item, where, line))
    return Baseline(origin, entries)


def _entry(item: object, where: str, line: int) -> Entry:
    if not isinstance(item, dict):
        raise BadInput(f"{where}: an entry is an object with entry, digest, reason and date")
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        raise BadInput(f"{where}: unknown field {unknown[0]!r}; an entry has "
                       f"{', '.join(FIELDS)} (path optional)")
    for field in ("entry", "digest", "reason", "date"):
        if not isinstance(item.get(field), str) or not item[field].strip():
            raise BadInput(f"{where}: {field!r} is missing or empty; every entry says which "
                           "withheld entry (entry, digest), why it was dealt with (reason) and "
                           "when (date)")
    digest = item["digest"]
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise BadInput(f"{where}: digest must be 64 lowercase hex digits (the withheld entry's "
                       "digest, as `plimsoll-ci baseline` writes it)")
    from datetime import datetime

    try:
        datetime.strptime(item["date"], "%Y-%m-%d")
    except ValueError:
        raise BadInput(f"{where}: date must be YYYY-MM-DD") from None
    path = item.get("path")
    if path is not None and (not isinstance(path, str) or not path):
        raise BadInput(f"{where}: path, when given, is the shipped file's path as reports show it")
    return Entry(item["entry"], digest, item["reason"], item["date"], path, line)


# --------------------------------------------------------------------------- filtering


def _matches(b: Entry, entry: str, path: str, digests: dict[str, str]) -> bool:
    return b.entry == entry and digests.get(entry) == b.digest and b.path in (None, path)


def split(result: ScanResult, baseline: Baseline, wset: Any
          ) -> tuple[ScanResult, list[tuple[Finding, Entry]]]:
    """`result` without the findings that `baseline` matches (so they fail nothing), and those
    findings, each with the baseline entry that matched it."""
    digests = _digests(wset)
    kept, matched = [], []
    for f in result.findings:
        b = next((b for b in baseline.entries if _matches(b, f.entry, f.path, digests)), None)
        if b is None:
            kept.append(f)
        else:
            matched.append((f, b))
    return result._replace(findings=kept), matched


def stale(baseline: Baseline, used: Iterable[Entry]) -> list[Entry]:
    """The baseline's entries that matched nothing (`used`: the entries that matched)."""
    seen = set(used)
    return [b for b in baseline.entries if b not in seen]


def _at(baseline: Baseline, b: Entry) -> str:
    return f"{baseline.origin} line {b.line}" if b.line else baseline.origin


def notes(baseline: Baseline, matched: Sequence[tuple[Finding, Entry]],
          unused: Sequence[Entry]) -> list[str]:
    """What a report says of a baseline: each baselined finding, their count, each stale entry."""
    from plimsoll_ci.shipscan.report import describe

    out = [f"baselined: {describe(f)} ({_at(baseline, b)}: {b.reason}, {b.date})"
           for f, b in matched]
    if matched:
        n = len(matched)
        out.append(f"{n} baselined finding{'s' if n != 1 else ''} not counted ({baseline.origin})")
    out += [f"stale baseline entry: {_at(baseline, b)}: {b.entry}"
            f"{' in ' + b.path if b.path else ''} matches no finding; remove it" for b in unused]
    return out


def apply(result: ScanResult, baseline: Baseline | None, wset: Any) -> ScanResult:
    """The scan's result with the baseline applied: baselined findings left out of the count and
    named in notes, stale entries noted. No baseline: `result` as it is."""
    if baseline is None:
        return result
    kept, matched = split(result, baseline, wset)
    said = notes(baseline, matched, stale(baseline, (b for _, b in matched)))
    return kept._replace(notes=[*kept.notes, *said])


def apply_each(results: Sequence[tuple[str, ScanResult, Any]], baseline: Baseline | None
               ) -> list[tuple[str, ScanResult]]:
    """`apply` over the scans of several commits (commit, result, withheld set): an entry is
    stale only when it matched nothing in any of them (said once, with the last commit)."""
    if baseline is None:
        return [(c, r) for c, r, _ in results]
    out, used = [], []
    for commit, result, wset in results:
        kept, matched = split(result, baseline, wset)
        used += [b for _, b in matched]
        out.append((commit, kept._replace(notes=[*kept.notes, *notes(baseline, matched, [])])))
    unused = stale(baseline, used)
    if unused and out:
        commit, last = out[-1]
        out[-1] = (commit, last._replace(notes=[*last.notes, *notes(baseline, [], unused)]))
    return out


def apply_history(report: Any, baseline: Baseline | None, wset: Any) -> Any:
    """A history replay's report (`history.HistoryReport`) without the entries the baseline
    matches (every path each of its windows first shipped in is covered), named in its notes
    instead, with the stale baseline entries."""
    if baseline is None:
        return report
    digests = _digests(wset)
    kept, said, used = [], [], []
    for e in report.entries:
        paths = {o.path for w in e.windows for o in w.first_findings}
        cover = [b for b in baseline.entries if _matches(b, e.entry, b.path or "", digests)
                 and (b.path is None or b.path in paths)]
        if cover and (any(b.path is None for b in cover)
                      or paths <= {b.path for b in cover}):
            used += cover
            b = cover[0]
            said.append(f"baselined: {e.entry}: first shipped in {e.first.first.oid[:12]}, "
                        f"{len(e.windows)} window(s) ({_at(baseline, b)}: {b.reason}, {b.date})")
        else:
            kept.append(e)
    if said:
        n = len(said)
        said.append(f"{n} baselined entr{'y' if n == 1 else 'ies'} not counted "
                    f"({baseline.origin})")
    said += notes(baseline, [], stale(baseline, used))
    return report._replace(entries=kept, notes=[*report.notes, *said])


def render(result: ScanResult, fmt: str, baseline: Baseline | None) -> str:
    """`report.render` of a result that `apply` filtered; a JSON report also gets the baseline's
    counts (`baseline`: file, baselined, stale; each finding is named in `notes`)."""
    from plimsoll_ci.shipscan import report

    text = report.render(result, fmt)
    if baseline is None or fmt != "json":
        return text
    doc = json.loads(text)
    doc["baseline"] = {
        "file": baseline.origin,
        "baselined": sum(n.startswith("baselined: ") for n in result.notes),
        "stale": sum(n.startswith("stale baseline entry: ") for n in result.notes)}
    return json.dumps(doc, indent=2) + "\n"


# --------------------------------------------------------------------------- writing


class Wanted(NamedTuple):
    """A finding of a report to baseline: entry id, and the shipped path (None: every path)."""

    entry: str
    path: str | None


def from_report(doc: object, origin: str, with_paths: bool) -> list[Wanted]:
    """The findings of a JSON report of `scan` (`findings`) or `history` (`entries`), one per
    entry id (and path, with `with_paths`), in the report's order; BadInput for another document."""
    found: list[Wanted] = []
    if isinstance(doc, dict) and isinstance(doc.get("findings"), list):
        pairs = [(f.get("entry"), f.get("path")) for f in doc["findings"] if isinstance(f, dict)]
    elif isinstance(doc, dict) and str(doc.get("format", "")).startswith("plimsoll-history/"):
        pairs = []
        for e in doc.get("entries") or []:
            for w in (e.get("windows") or [e]) if isinstance(e, dict) else []:
                first = w.get("first") if isinstance(w, dict) else None
                for f in (first or {}).get("findings") or [{}]:
                    pairs.append((e.get("entry"), f.get("path") if isinstance(f, dict) else None))
    else:
        raise BadInput(f"report {origin}: not a JSON report of `plimsoll-ci scan` or `history` "
                       "(run it with --format json)")
    for entry, path in pairs:
        if not isinstance(entry, str):
            continue
        w = Wanted(entry, path if with_paths and isinstance(path, str) else None)
        if w not in found:
            found.append(w)
    return found


def build(wanted: Sequence[Wanted], wset: Any, reason: str, old: Baseline | None = None,
          today: str | None = None) -> tuple[list[dict[str, str]], list[str]]:
    """Baseline entries for `wanted` (after those of `old`, none twice) and what was skipped
    (ids the withheld set does not hold, such as a shipped withheld set, said as messages)."""
    from datetime import UTC, datetime

    today = today or datetime.now(UTC).strftime("%Y-%m-%d")
    digests = _digests(wset)
    out = [{k: v for k, v in b._asdict().items() if k in FIELDS and v is not None}
           for b in (old.entries if old else [])]
    have = {(d["entry"], d["digest"], d.get("path")) for d in out}
    skipped = []
    for w in wanted:
        digest = digests.get(w.entry)
        if digest is None:
            skipped.append(f"{w.entry}: not an entry of {wset.origin} (a shipped withheld set, "
                           "or a report of another set) - not baselined")
            continue
        if (w.entry, digest, w.path) in have:
            continue
        have.add((w.entry, digest, w.path))
        item = {"entry": w.entry, "digest": digest, **({"path": w.path} if w.path else {}),
                "reason": reason, "date": today}
        out.append(item)
    return out, skipped


def dumps(entries: Sequence[dict[str, str]]) -> str:
    """The baseline file: the format tag, then one entry a line (diffs stay readable, and each
    entry has a line that messages can name)."""
    rows = [json.dumps({k: e[k] for k in FIELDS if k in e}, ensure_ascii=False) for e in entries]
    body = ",\n  ".join(rows)
    return (f'{{"format": "{FORMAT}", "entries": [\n  {body}\n]}}\n' if rows
            else f'{{"format": "{FORMAT}", "entries": []}}\n')
