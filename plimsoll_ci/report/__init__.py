"""Reports of a ship scan: text, JSON, SARIF 2.1.0, Markdown. Safe to publish: no values.

Everything here works from a `ScanResult`: findings carry entry ids and places, never values, and
the result carries its mode (refuse: SARIF level `error`; warn: `warning`), so every caller's
report says the same for the same scan.
"""

from __future__ import annotations

import hashlib
import json

from plimsoll_ci import __version__
from plimsoll_ci.scan import Finding, ScanResult

FORMATS = ("text", "json", "sarif", "markdown")
RULES = {
    "value": ("withheld-value", "A withheld value ships", "Rotate the value (draw new seeds or "
              "labels) and remove it from what ships; it is in git history too."),
    "file": ("withheld-file", "A withheld file ships", "Remove the file from the ship set."),
    "source": ("withheld-source", "A copy of withheld source ships", "Remove the copied code "
               "from the ship set."),
    "withheld-set": ("withheld-set-shipped", "A withheld set file ships", "Exclude the withheld "
                     "set from every ship set."),
}
# The tripwire's wording: what it finds reached a model in a recorded request.
TRIPWIRE_RULES = {
    "value": ("sealed-value", "A sealed value was sent to a model", "Remove it from the prompt or "
              "upload, and draw fresh values: this run's scores are not evidence."),
    "file": ("sealed-file", "A sealed file was sent to a model", "Remove the file from what the "
             "harness sends."),
    "source": ("sealed-source", "A copy of sealed source was sent to a model", "Remove the "
               "copied code from what the harness sends."),
    "withheld-set": ("sealed-set-sent", "A sealed or withheld set file was sent to a model",
                     "Never send a set file to a model."),
}


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


def fingerprint(f: Finding) -> str:
    """Stable across commits and line moves: path, chain, entry, kind, where; no commit id."""
    key = "\0".join((f.path, f.chain, f.entry, f.kind, f.where))
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


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


def artifact_uri(path: str) -> str:
    """A valid SARIF `uri` for a shipped path: percent-encoded, relative unless absolute.

    Names may hold spaces, `:`, `#` or bytes that are not UTF-8; a raw path there is not a URI
    reference, and code scanning tools reject or misplace it.
    """
    from urllib.parse import quote

    raw = quote(path.replace("\\", "/").encode("utf-8", "surrogateescape"))
    if raw.startswith("/"):
        return "file://" + raw
    return raw or "."


def level(result: ScanResult) -> str:
    """The SARIF level (and GitHub annotation) of the result's findings: its mode says."""
    return "error" if result.mode == "refuse" else "warning"


def to_sarif(result: ScanResult, tripwire: bool = False) -> dict:
    """A SARIF 2.1.0 log with one run (in the tripwire's words when `tripwire`)."""
    rules_table = TRIPWIRE_RULES if tripwire else RULES
    noun = "Sealed" if tripwire else "Withheld"
    severity = level(result)
    rules = [{
        "id": rid,
        "name": name.title().replace(" ", ""),
        "shortDescription": {"text": name},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": severity},
    } for rid, name, help_text in rules_table.values()]
    results = []
    for f in result.findings:
        rid = rules_table[f.kind][0]
        region: dict = {}
        if f.line > 0:
            region = {"startLine": f.line, "startColumn": f.column}
        elif f.where == "content":
            region = {"byteOffset": f.column}
        loc: dict = {"artifactLocation": {"uri": artifact_uri(f.path)}}
        if region:
            loc["region"] = region
        msg = f"{noun} {f.kind} {f.entry} found in the {f.where} of {f.path}"
        if f.chain:
            msg += f" ({f.chain})"
        if f.detail:
            msg += f"; {f.detail}"
        results.append({
            "ruleId": rid,
            "ruleIndex": [r[0] for r in rules_table.values()].index(rid),
            "level": severity,
            "message": {"text": msg + "."},
            "locations": [{"physicalLocation": loc}],
            "partialFingerprints": {"plimsollFinding/v1": fingerprint(f)},
            "properties": {"entry": f.entry, "chain": f.chain, "where": f.where},
        })
    notes = [{"level": "note", "message": {"text": n}} for n in result.notes]
    run: dict = {
        "tool": {"driver": {
            "name": "plimsoll-ci", "version": __version__, "semanticVersion": __version__,
            "informationUri": "https://github.com/plimsoll-ci/plimsoll-ci",
            "rules": rules,
        }},
        "results": results,
        "invocations": [{"executionSuccessful": True,
                         "toolExecutionNotifications": notes}],
        "properties": {"scanned": {"files": result.files, "bytes": result.bytes}},
    }
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
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
