"""History reports: text, JSON, SARIF 2.1.0 and Markdown of a replay, and the result of a bisect.
None holds a withheld value (names that carry one were redacted before).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from plimsoll_ci.history.records import (
    ASSUMPTION,
    BisectResult,
    CommitInfo,
    HistoryReport,
    Occurrence,
)
from plimsoll_ci.names import md, shown
from plimsoll_ci.shipscan.sarif import RULES as SCAN_RULES
from plimsoll_ci.shipscan.sarif import Rule, artifact_uri, sarif_log, sarif_region, sarif_rule
from plimsoll_ci.timestamps import now_text

FORMAT = "plimsoll-history/2"


def iso(ts: int) -> str:
    """A commit time as ISO 8601 UTC."""
    return now_text(datetime.fromtimestamp(ts, UTC))


def duration(seconds: int) -> str:
    """`46 min`, `3 h 5 min`, `2 d 4 h`: a window's length for people."""
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"



def _occ_json(o: Occurrence) -> dict[str, Any]:
    d: dict[str, Any] = {"set": o.set, "path": o.path, "line": o.line, "column": o.column,
                         "chain": o.chain, "kind": o.kind, "where": o.where,
                         # every decode chain of the one leak (`plain`: as written), as a scan's
                         "via": [c or "plain" for c in (o.via or (o.chain,))]}
    if o.detail:
        d["detail"] = o.detail
    return d


def _commit_json(c: CommitInfo, occ: list[Occurrence] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"commit": c.oid, "time": iso(c.time), "timestamp": c.time,
                         "author": c.author}
    if occ is not None:
        d["paths"] = sorted({o.path for o in occ})
        d["findings"] = [_occ_json(o) for o in occ]
    return d


def to_json(report: HistoryReport) -> dict[str, Any]:
    """The JSON document of a replay; it never holds a withheld value.

    Each window lists its commits as ranges (runs in the replay's order); every commit, with the
    findings it ships, only when the replay was asked for each (`Options.every_commit`).
    """
    entries = []
    for e in report.entries:
        doc: dict[str, Any] = {
            "entry": e.entry,
            "kind": e.first.first_findings[0].kind,
            "first": _commit_json(e.first.first, e.first.first_findings),
            "fixed": _commit_json(e.fixed) if e.fixed else None,
            "window_seconds": e.seconds,
            "commit_count": e.commit_count,
            "windows": [],
        }
        for w in e.windows:
            win: dict[str, Any] = {
                "first": _commit_json(w.first, w.first_findings),
                "fixed": _commit_json(w.fixed) if w.fixed else None,
                "window_seconds": w.seconds,
                "commit_count": len(w.commits),
                "ranges": [{"first": r.first, "last": r.last, "commits": r.commits}
                           for r in w.ranges],
            }
            if report.every_commit:
                win["commits"] = w.commits
            doc["windows"].append(win)
        if report.every_commit:
            doc["commits"] = [_commit_json(c, occ) for c, occ in e.commits]
        entries.append(doc)
    return {"format": FORMAT, "range": report.revs, "entries": entries,
            "commits_scanned": report.commits_scanned, "blobs_scanned": report.blobs_scanned,
            "blobs_from_cache": report.blobs_from_cache, "notes": report.notes}


def _chains(o: Occurrence) -> str:
    """` [chain]`, or ` [plain, html-entities]` for one leak seen through several."""
    if o.via:
        return f" [{', '.join(shown(c) or 'plain' for c in o.via)}]"
    return f" [{shown(o.chain)}]" if o.chain else ""


def _place(o: Occurrence) -> str:
    where = f"{o.path}:{o.line}:{o.column}" if o.line else (
        f"{o.path} (name)" if o.where == "name" else f"{o.path} @{o.column}")
    chains = f" [{', '.join(c or 'plain' for c in o.via)}]" if o.via else \
        f" [{o.chain}]" if o.chain else ""  # (the text report escapes its lines as a whole)
    return where + chains + (f" ({o.detail})" if o.detail else "")


def _text(report: HistoryReport) -> str:
    lines = []
    for e in report.entries:
        n = e.commit_count
        state = "still shipping" if e.fixed is None else "fixed"
        lines.append(f"{e.entry}: shipped {duration(e.seconds)} across {n} commit"
                     f"{'s' if n != 1 else ''} in {len(e.windows)} window"
                     f"{'s' if len(e.windows) != 1 else ''} ({state})")
        for i, w in enumerate(e.windows, 1):
            tag = "first" if i == 1 else "again"
            lines.append(f"  {tag}  {w.first.oid[:12]}  {iso(w.first.time)}  {w.first.author}")
            for o in w.first_findings:
                lines.append(f"         {_place(o)}  (set {o.set})")
            if w.fixed:
                lines.append(f"  fixed  {w.fixed.oid[:12]}  {iso(w.fixed.time)}  "
                             f"after {duration(w.seconds)} across {len(w.commits)} commit"
                             f"{'s' if len(w.commits) != 1 else ''}")
            else:
                lines.append(f"  open   still shipping at the tip after {duration(w.seconds)} "
                             f"across {len(w.commits)} commits")
    if not report.entries:
        lines.append("nothing withheld shipped in the range")
    lines.append(f"{report.commits_scanned} commits, {report.blobs_scanned} distinct blobs "
                 f"({report.blobs_from_cache} from the cache)")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _markdown(report: HistoryReport) -> str:
    out = ["## plimsoll-ci history", ""]
    if not report.entries:
        out.append("Nothing withheld shipped in the range.")
    else:
        out += ["| entry | first shipped | where | fixed | window | commits |",
                "|---|---|---|---|---|---|"]
        for e in report.entries:
            for w in e.windows:
                where = "<br>".join(sorted({f"`{md(o.path, code=True)}`" + (f":{o.line}" if o.line else "")
                                            for o in w.first_findings}))
                fixed = f"`{w.fixed.oid[:12]}` {iso(w.fixed.time)}" if w.fixed else "**still shipping**"
                out.append(f"| `{md(e.entry, code=True)}` | `{w.first.oid[:12]}` {iso(w.first.time)} | {where} "
                           f"| {fixed} | {duration(w.seconds)} | {len(w.commits)} |")
    out += ["", f"{report.commits_scanned} commits, {report.blobs_scanned} distinct blobs "
            f"({report.blobs_from_cache} from the cache)."]
    if report.notes:
        out += [""] + [f"- {md(n)}" for n in report.notes]
    return "\n".join(out) + "\n"


# History's rules: one per kind of entry, in the history's words (an entry shipped in a commit).
_HISTORY_RULES = {
    kind: Rule(
        f"plimsoll/history/{kind}", f"{scan_rule.name}InHistory",
        f"{scan_rule.short} in a commit of the history",
        f"{scan_rule.full} The result points at the first commit of a window in which it "
        "shipped; its properties name that commit, the fix (null while a tip still ships it) "
        "and the window's length.",
        "The value is in git history from the first commit named until its fix: if that history "
        "was ever pushed, treat the value as public and rotate it, and re-judge scores from runs "
        "in the window (docs/when-it-fires.md). Fix what ships as for a scan.",
        "history.md")
    for kind, scan_rule in SCAN_RULES.items()
}


def _sarif(report: HistoryReport) -> str:
    results = []
    kinds = list(_HISTORY_RULES)
    for e in report.entries:
        for w in e.windows:
            fixed = (f"fixed in {w.fixed.oid[:12]} after {duration(w.seconds)}" if w.fixed
                     else "still shipping at the tip")
            for o in w.first_findings:
                fp = hashlib.sha256(f"{e.entry}\0{o.set}\0{o.path}\0{o.chain}\0{o.where}".encode(
                    "utf-8", "surrogateescape")).hexdigest()
                rule = _HISTORY_RULES[o.kind]
                results.append({
                    "ruleId": rule.id,
                    "ruleIndex": kinds.index(o.kind),
                    "level": "error",
                    "message": {"text": f"withheld entry {shown(e.entry)} first shipped in "
                                        f"{shown(o.path)} in commit {w.first.oid[:12]} "
                                        f"({iso(w.first.time)}) via {o.where}"
                                        f"{_chains(o)}; "
                                        f"{fixed} across {len(w.commits)} commits"},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": artifact_uri(o.path)},
                        "region": sarif_region(o.line, o.column, o.where)}}],
                    "partialFingerprints": {"plimsollHistory/v1": fp},
                    "properties": {"entry": e.entry, "firstCommit": w.first.oid,
                                   "fixedCommit": w.fixed.oid if w.fixed else None,
                                   "windowSeconds": w.seconds, "set": o.set,
                                   "where": o.where,
                                   "via": [shown(c) or "plain" for c in (o.via or (o.chain,))]},
                })
    doc = sarif_log([sarif_rule(r, "error") for r in _HISTORY_RULES.values()], results,
                    "history", properties={"commitsScanned": report.commits_scanned,
                                           "blobsScanned": report.blobs_scanned,
                                           "notes": [shown(n) for n in report.notes]})
    return json.dumps(doc, indent=2) + "\n"


def render(report: HistoryReport, fmt: str) -> str:
    """The report as text, json, sarif or markdown."""
    if fmt == "json":
        return json.dumps(to_json(report), indent=2) + "\n"
    if fmt == "sarif":
        return _sarif(report)
    if fmt == "markdown":
        return _markdown(report)
    return _text(report)


def render_bisect(result: BisectResult, fmt: str) -> str:
    """The result of `--bisect` as text (or JSON for json/sarif/markdown callers that parse it)."""
    if fmt == "json":
        doc = {"format": "plimsoll-history-bisect/1", "entry": result.entry,
               "first": _commit_json(result.first, result.findings) if result.first else None,
               "fixed": _commit_json(result.fixed) if result.fixed else None,
               "scans": result.scans, "commits": result.commits, "assumption": ASSUMPTION,
               "notes": result.notes}
        return json.dumps(doc, indent=2) + "\n"
    lines = []
    if result.first:
        lines.append(f"{result.entry}: first ships at {result.first.oid[:12]} "
                     f"{iso(result.first.time)} {result.first.author}")
        lines += [f"  {_place(o)}  (set {o.set})" for o in result.findings]
        if result.fixed:
            lines.append(f"{result.entry}: fixed at {result.fixed.oid[:12]} "
                         f"{iso(result.fixed.time)} {result.fixed.author}")
    else:
        lines.append(f"{result.entry}: not found shipping")
    lines.append(f"{result.scans} scans over {result.commits} commits")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"

