"""The tripwire's reports and the canary check's: safe to publish, no value and no marker.

The tripwire renders every format of `plimsoll_ci.shipscan.report.FORMATS`: its own text (hits "reached a
model"), the ship scan's JSON and SARIF (with the tripwire's rule names), and its Markdown summary.
"""

from __future__ import annotations

import json

from plimsoll_ci.shipscan import report
from plimsoll_ci.shipscan.results import ScanResult
from plimsoll_ci.tripwire.canary import CheckResult
from plimsoll_ci.tripwire.formats import CANARY_CHECK_FORMAT

CANARY_FORMATS = ("text", "json")
_WHAT = {"value": "sealed value", "file": "sealed file", "source": "copy of sealed source",
         "withheld-set": "a sealed/withheld set file"}
_LEAKED_SHOWN = 20  # places listed per leaked marker


def render(result: ScanResult, fmt: str, requests: str) -> str:
    """The tripwire's report in `fmt` (one of `plimsoll_ci.shipscan.report.FORMATS`), in the result's
    mode."""
    if fmt == "text":
        return render_text(result, requests)
    if fmt == "markdown":
        return report.to_markdown(result, title="plimsoll-ci tripwire")
    return report.render(result, fmt, tripwire=True)


def render_text(result: ScanResult, requests: str) -> str:
    """Plain text for a terminal: one line per hit (recorded file, place, sealed id), no values."""
    lines = []
    for f in result.findings:
        at = f" at {f.chain}" if f.chain else ""
        detail = f" ({f.detail})" if f.detail else ""
        lines.append(f"{f.path}:{report.place(f)}: {_WHAT.get(f.kind, f.kind)} {f.entry}{at}"
                     f"{detail}")
    lines += [f"note: {n}" for n in result.notes]
    n = len(result.findings)
    lines.append(f"tripwire: {n} hit{'s' if n != 1 else ''} in {result.files} recorded file"
                 f"{'s' if result.files != 1 else ''} under {requests} "
                 f"({result.bytes:,} bytes read)")
    if n:
        lines.append("A sealed value reached a model: the run's scores are not evidence. Find "
                     "where the harness put it in the prompt or upload, remove it, and draw "
                     "fresh values (see docs/tripwire.md)")
    return "".join(report.shown(x) + "\n" for x in lines)  # a recorded file's name is input


def render_canary(result: CheckResult, fmt: str, planted: str, requests: str) -> str:
    """The canary check's report in `fmt` (one of `CANARY_FORMATS`)."""
    if fmt == "json":
        return canary_json(result)
    return canary_text(result, planted, requests)


def canary_text(result: CheckResult, planted: str, requests: str) -> str:
    """One line per marker: ok, not planted, or leaked (and where)."""
    lines = []
    for v in result.verdicts:
        if v.ok:
            lines.append(f"ok    {v.place} ({v.kind}): planted ({v.planted[0]}), "
                         "in no request")
            continue
        if not v.planted:
            lines.append(f"FAIL  {v.place} ({v.kind}): not found in the planted tree {planted}; "
                         "the harness did not plant it where its secrets live")
        for spot in v.leaked[:_LEAKED_SHOWN]:
            lines.append(f"FAIL  {v.place} ({v.kind}): leaked into a request: {spot}")
        if len(v.leaked) > _LEAKED_SHOWN:
            lines.append(f"FAIL  {v.place} ({v.kind}): ... and {len(v.leaked) - _LEAKED_SHOWN} "
                         "more places")
    for n in result.notes:
        lines.append(f"note  {n}")
    failed = sum(not v.ok for v in result.verdicts)
    lines.append(f"canary check: {len(result.verdicts) - failed} of {len(result.verdicts)} markers "
                 f"ok; requests read from {requests}"
                 + ("" if not failed else f"; {failed} failed"))
    return "".join(report.shown(x) + "\n" for x in lines)


def canary_json(result: CheckResult) -> str:
    """The verdicts as JSON (markers by place, never by value)."""
    return json.dumps({
        "format": CANARY_CHECK_FORMAT,
        "ok": result.ok,
        "markers": [{"place": v.place, "kind": v.kind, "ok": v.ok, "planted": v.planted,
                     "leaked": v.leaked} for v in result.verdicts],
        "notes": result.notes,
    }, indent=2) + "\n"
