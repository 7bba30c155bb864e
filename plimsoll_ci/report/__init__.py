"""Reports of a ship scan: text, JSON, SARIF 2.1.0, Markdown. Safe to publish: no values.

Everything here works from a `ScanResult`: findings carry entry ids and places, never values, and
the result carries its mode (refuse: SARIF level `error`; warn: `warning`), so every caller's
report says the same for the same scan.
"""

from __future__ import annotations

import json

from plimsoll_ci.report.names import shown
from plimsoll_ci.report.sarif import (
    REPOSITORY,
    RULES,
    TOOL_NAME,
    TRIPWIRE_RULES,
    artifact_uri,
    fingerprint,
    level,
    to_sarif,
)
from plimsoll_ci.scan import Finding, ScanResult

__all__ = ["FORMATS", "REPOSITORY", "RULES", "TOOL_NAME", "TRIPWIRE_RULES", "artifact_uri",
           "describe", "fingerprint", "level", "place", "render", "shown", "to_json",
           "to_markdown", "to_sarif", "to_text"]

FORMATS = ("text", "json", "sarif", "markdown")


def place(f: Finding) -> str:
    """`line:column` for text, `byte N` for binary content and names."""
    if f.line > 0:
        return f"{f.line}:{f.column}"
    if f.where == "name":
        return "name"
    return f"byte {f.column}"


def describe(f: Finding) -> str:
    """One line a person reads: file, place, chain, entry, kind."""
    chain = f" via {f.chain}" if f.chain else ""
    detail = f" ({f.detail})" if f.detail else ""
    return f"{f.path}:{place(f)}: withheld {f.kind} {f.entry}{chain}{detail}"


def to_json(result: ScanResult) -> dict:
    """The JSON report document."""
    return {
        "findings": [
            {"path": f.path, "line": f.line, "column": f.column, "chain": f.chain,
             "entry": f.entry, "kind": f.kind, "where": f.where, "detail": f.detail}
            for f in result.findings
        ],
        "notes": list(result.notes),
        "scanned": {"files": result.files, "bytes": result.bytes},
    }


def to_text(result: ScanResult) -> str:
    """Plain text for a terminal."""
    lines = [describe(f) for f in result.findings]
    lines += [f"note: {n}" for n in result.notes]
    n = len(result.findings)
    lines.append(f"{n} finding{'s' if n != 1 else ''} in {result.files} file"
                 f"{'s' if result.files != 1 else ''} ({result.bytes:,} bytes scanned)")
    if n:
        lines.append("Withheld entries ship. Remove them from the ship set and rotate them "
                     "(they are in git history): see docs/when-it-fires.md")
    return "\n".join(lines) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("`", "'")


def to_markdown(result: ScanResult, title: str = "plimsoll-ci ship scan") -> str:
    """A Markdown job summary (GitHub `$GITHUB_STEP_SUMMARY`)."""
    n = len(result.findings)
    head = "✅ no withheld entry ships" if not n else f"❌ {n} finding{'s' if n != 1 else ''}" \
        if result.mode == "refuse" else f"⚠️ {n} finding{'s' if n != 1 else ''} (mode warn)"
    out = [f"## {title}", "", f"{head} — {result.files} files, {result.bytes:,} bytes scanned.", ""]
    if n:
        out += ["| file | place | entry | kind | decode chain |", "|---|---|---|---|---|"]
        for f in result.findings:
            out.append(f"| `{_md(f.path)}` | {place(f)} | `{_md(f.entry)}` | {f.kind} | "
                       f"{_md(f.chain) or '—'} |")
        out.append("")
    if result.notes:
        out += ["<details><summary>notes</summary>", ""]
        out += [f"- {_md(x)}" for x in result.notes]
        out += ["", "</details>", ""]
    return "\n".join(out)


def render(result: ScanResult, fmt: str, tripwire: bool = False) -> str:
    """The report in `fmt` (text, json, sarif, markdown), in the result's own mode."""
    if fmt == "json":
        return json.dumps(to_json(result), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(result, tripwire), indent=2) + "\n"
    if fmt == "markdown":
        return to_markdown(result)
    return to_text(result)

