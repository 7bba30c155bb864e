"""Reports of a ship scan: text, JSON, SARIF 2.1.0, Markdown. Safe to publish: no values.

Everything here works from a `ScanResult`: findings carry entry ids and places, never values, and
the result carries its mode (refuse: SARIF level `error`; warn: `warning`), so every caller's
report says the same for the same scan. Every name a report shows (path, chain, entry id, note)
goes through `shown`: one finding is one line, and nothing in a name reaches the terminal raw.
"""

from __future__ import annotations

import json

from plimsoll_ci.names import md, path_fields, shipped_as, shown, via
from plimsoll_ci.shipscan.results import ScanResult
from plimsoll_ci.shipscan.sarif import (
    REPOSITORY,
    RULES,
    TOOL_NAME,
    TRIPWIRE_RULES,
    artifact_uri,
    fingerprint,
    level,
    to_sarif,
)
from plimsoll_ci.shipscan.scan import Finding

__all__ = ["FORMATS", "REPOSITORY", "RULES", "STAGE_ADVICE", "TOOL_NAME", "TRIPWIRE_RULES",
           "artifact_uri",
           "describe", "fingerprint", "level", "md", "place", "render", "shipped_as", "shown",
           "to_json", "to_markdown", "to_sarif", "to_text", "via"]

FORMATS = ("text", "json", "sarif", "markdown")


def place(f: Finding) -> str:
    """`line:column` for text, `byte N` for binary content and names."""
    if f.line > 0:
        return f"{f.line}:{f.column}"
    if f.where == "name":
        return "name"
    return f"byte {f.column}"


def describe(f: Finding) -> str:
    """One line a person reads: file, place, chain(s), entry, kind, and the ship sets."""
    chain = f" via {', '.join(via(f))}" if f.via or f.chain else ""
    more = "; ".join(x for x in (shown(f.detail), shipped_as(f)) if x)
    detail = f" ({more})" if more else ""
    return f"{shown(f.path)}:{place(f)}: withheld {f.kind} {shown(f.entry)}{chain}{detail}"


def to_json(result: ScanResult) -> dict:
    """The JSON report document: names as shown, a name's exact bytes in `path_bytes` (base64)
    when the shown path differs from it."""
    return {
        "findings": [
            {**path_fields(f.path), "line": f.line, "column": f.column, "chain": shown(f.chain),
             "entry": shown(f.entry), "kind": f.kind, "where": f.where, "detail": shown(f.detail),
             "via": via(f), "sets": [shown(x) for x in f.sets], "also": [shown(x) for x in f.also]}
            for f in result.findings
        ],
        "notes": [shown(n) for n in result.notes],
        "scanned": {"files": result.files, "bytes": result.bytes},
    }


# What is true, and what to do, when withheld entries are found at each stage (quoted in
# docs/when-it-fires.md, which a test keeps in step). "scan" is for a caller that cannot know
# whether what it scanned was committed or pushed.
STAGE_ADVICE = {
    "scan": "Withheld entries ship. Remove them from what ships (or exclude the files from their "
            "ship set). If a commit that carries them was ever pushed, or a sandbox got them, "
            "treat them as public and rotate them: see docs/when-it-fires.md",
    "commit": "Refused at git commit: nothing was committed and nothing left this machine. "
              "Remove the values from the staged files (or exclude the files from their ship "
              "set), stage the fix and commit again: see docs/when-it-fires.md",
    "push": "Refused at git push: nothing was pushed, but the commits named above carry the "
            "values in your local history. Rewrite them so that no commit carries a value (git "
            "commit --amend for the last one, git rebase -i for a few older ones, git "
            "filter-repo --replace-text or --invert-paths across many), then push again; "
            "rotate only if those commits were pushed somewhere before: see "
            "docs/when-it-fires.md",
}


def to_text(result: ScanResult, stage: str | None = "scan") -> str:
    """Plain text for a terminal; with findings it ends with what is true and what to do at
    `stage` (`STAGE_ADVICE`; None: the caller says it)."""
    lines = [describe(f) for f in result.findings]
    lines += [f"note: {shown(n)}" for n in result.notes]
    n = len(result.findings)
    lines.append(f"{n} finding{'s' if n != 1 else ''} in {result.files} file"
                 f"{'s' if result.files != 1 else ''} ({result.bytes:,} bytes scanned)")
    if n and stage is not None:
        lines.append(STAGE_ADVICE[stage])
    return "\n".join(lines) + "\n"


def to_markdown(result: ScanResult, title: str = "plimsoll-ci ship scan") -> str:
    """A Markdown job summary (GitHub `$GITHUB_STEP_SUMMARY`)."""
    n = len(result.findings)
    head = "✅ no withheld entry ships" if not n else f"❌ {n} finding{'s' if n != 1 else ''}" \
        if result.mode == "refuse" else f"⚠️ {n} finding{'s' if n != 1 else ''} (mode warn)"
    out = [f"## {title}", "", f"{head} — {result.files} files, {result.bytes:,} bytes scanned.", ""]
    if n:
        out += ["| file | place | entry | kind | decode chain |", "|---|---|---|---|---|"]
        for f in result.findings:
            chains = md(", ".join(via(f))) if f.via or f.chain else "—"
            sets = f" ({md(shipped_as(f))})" if f.sets or f.also else ""
            out.append(f"| `{md(f.path, code=True)}`{sets} | {place(f)} | "
                       f"`{md(f.entry, code=True)}` | {f.kind} | {chains} |")
        out.append("")
    if result.notes:
        out += ["<details><summary>notes</summary>", ""]
        out += [f"- {md(x)}" for x in result.notes]
        out += ["", "</details>", ""]
    return "\n".join(out)


def render(result: ScanResult, fmt: str, tripwire: bool = False,
           stage: str | None = "scan") -> str:
    """The report in `fmt` (text, json, sarif, markdown), in the result's own mode; a text
    report ends with the advice of `stage` (see `to_text`)."""
    if fmt == "json":
        return json.dumps(to_json(result), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(result, tripwire), indent=2) + "\n"
    if fmt == "markdown":
        return to_markdown(result)
    return to_text(result, stage)

