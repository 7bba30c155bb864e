"""SARIF 2.1.0 of a ship scan (and the tripwire's), and the pieces the history's SARIF shares.

What GitHub code scanning and the SARIF Multitool (`validate --rule-kind "Gh;Sarif"`) ask of a
log, every log here gives: one tool name and one repository (`TOOL_NAME`, `REPOSITORY`), rules
with a Pascal-case name, a short and a full description, help and a help URI, and a region on
every result (a name finding is placed at the top of its file: the file is where it was seen).
A location's URI is percent-encoded (`drone%3Aviewer/replay.html`, so a `:` is not read as a
scheme); every message shows the path as a person reads it (`drone:viewer/replay.html`).
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple
from urllib.parse import quote

from plimsoll_ci import __version__
from plimsoll_ci.names import shipped_as, shown, via
from plimsoll_ci.shipscan.results import ScanResult
from plimsoll_ci.shipscan.scan import Finding

TOOL_NAME = "plimsoll-ci"
REPOSITORY = "https://github.com/plimsoll-ci/plimsoll-ci"
SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


def docs_uri(page: str) -> str:
    """The published address of a page under `docs/`."""
    return f"{REPOSITORY}/blob/main/docs/{page}"


class Rule(NamedTuple):
    """One SARIF rule: its id, Pascal-case name, what it finds (short and full) and what to do."""

    id: str
    name: str
    short: str
    full: str
    help: str
    page: str  # the docs page that says what to do


_ROTATE = ("If a commit that carries it was ever pushed, treat the value as public and rotate it "
           "(docs/when-it-fires.md).")
RULES = {
    "value": Rule(
        "withheld-value", "WithheldValueShips", "A withheld value ships",
        "A file in a ship set carries a value of the withheld set (a held-out seed, a truth "
        "label), in its contents or its name, as written or under one layer of encoding; the "
        "entry id names which value, the report never shows it.",
        "Remove the value from the shipped file, or exclude the file from its ship set. " + _ROTATE,
        "when-it-fires.md"),
    "file": Rule(
        "withheld-file", "WithheldFileShips", "A withheld file ships",
        "A file in a ship set has the same bytes as a file of the withheld set (truth labels, "
        "a simulator's data).",
        "Remove the file from the ship set; the answer key belongs on the trusted side.",
        "when-it-fires.md"),
    "source": Rule(
        "withheld-source", "WithheldSourceCopyShips", "A copy of withheld source ships",
        "A file in a ship set carries a substantial part of a withheld source file (the "
        "simulator's generator, say), renamed or reformatted; the detail gives the overlap.",
        "Remove the copied code from the ship set; the generator belongs on the trusted side.",
        "when-it-fires.md"),
    "withheld-set": Rule(
        "withheld-set-shipped", "WithheldSetShips", "A withheld set file ships",
        "A withheld set (digests of what must never ship) is itself in a ship set; an unkeyed "
        "set's digests of short values can be brute-forced.",
        "Exclude the withheld set from every ship set.", "withheld-sets.md"),
}
# The tripwire's wording: what it finds reached a model in a recorded request.
TRIPWIRE_RULES = {
    "value": Rule(
        "sealed-value", "SealedValueSent", "A sealed value was sent to a model",
        "A recorded request to a model carries a value of the sealed set (an answer the model "
        "must never see), as written or under one layer of encoding.",
        "Remove it from the prompt or upload, and draw fresh values: this run's scores are not "
        "evidence.", "tripwire.md"),
    "file": Rule(
        "sealed-file", "SealedFileSent", "A sealed file was sent to a model",
        "A recorded request carries a file of the sealed set byte for byte.",
        "Remove the file from what the harness sends.", "tripwire.md"),
    "source": Rule(
        "sealed-source", "SealedSourceCopySent", "A copy of sealed source was sent to a model",
        "A recorded request carries a substantial part of a sealed source file.",
        "Remove the copied code from what the harness sends.", "tripwire.md"),
    "withheld-set": Rule(
        "sealed-set-sent", "SealedSetSent", "A sealed or withheld set file was sent to a model",
        "A recorded request carries a sealed or withheld set file.",
        "Never send a set file to a model.", "tripwire.md"),
}


def sarif_rule(rule: Rule, level: str) -> dict[str, Any]:
    """The `reportingDescriptor` of `rule` at `level`."""
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.short},
        "fullDescription": {"text": rule.full},
        "help": {"text": rule.help},
        "helpUri": docs_uri(rule.page),
        "defaultConfiguration": {"level": level},
    }


def sarif_region(line: int, column: int, where: str) -> dict[str, int]:
    """Where in the file: line and column for text, the byte offset for binary content, and the
    top of the file for a name (the name is the file's own)."""
    if line > 0:
        return {"startLine": line, "startColumn": max(column, 1)}
    if where == "content":
        return {"byteOffset": column}
    return {"startLine": 1}


def sarif_log(rules: list[dict[str, Any]], results: list[dict[str, Any]], category: str,
              **run_fields: Any) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run of this tool: one driver, its `category` (GitHub's
    `runAutomationDetails.id`, so scan, history and tripwire alerts never replace each other)."""
    run: dict[str, Any] = {
        "tool": {"driver": {"name": TOOL_NAME, "version": __version__,
                            "semanticVersion": __version__, "informationUri": REPOSITORY,
                            "rules": rules}},
        "automationDetails": {"id": f"{TOOL_NAME}/{category}/"},
        "results": results,
        **run_fields,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def artifact_uri(path: str) -> str:
    """A valid SARIF `uri` for a shipped path: percent-encoded, relative unless absolute.

    Names may hold spaces, `:`, `#` or bytes that are not UTF-8; a raw path there is not a URI
    reference, and code scanning tools reject or misplace it.
    """
    raw = quote(path.replace("\\", "/").encode("utf-8", "surrogateescape"))
    if raw.startswith("/"):
        return "file://" + raw
    return raw or "."


def fingerprint(f: Finding) -> str:
    """Stable across commits and line moves: path, chain, entry, kind, where; no commit id."""
    key = "\0".join((f.path, f.chain, f.entry, f.kind, f.where))
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def level(result: ScanResult) -> str:
    """The SARIF level (and GitHub annotation) of the result's findings: its mode says."""
    return "error" if result.mode == "refuse" else "warning"


def to_sarif(result: ScanResult, tripwire: bool = False) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run (in the tripwire's words when `tripwire`)."""
    table = TRIPWIRE_RULES if tripwire else RULES
    noun = "Sealed" if tripwire else "Withheld"
    severity = level(result)
    index = {kind: i for i, kind in enumerate(table)}
    results = []
    for f in result.findings:
        chains = via(f)
        msg = f"{noun} {f.kind} {shown(f.entry)} found in the {f.where} of {shown(f.path)}"
        if f.via or f.chain:
            msg += f" (via {', '.join(chains)})" if f.via else f" ({shown(f.chain)})"
        if f.detail:
            msg += f"; {shown(f.detail)}"
        if f.sets or f.also:
            msg += f"; {shipped_as(f)}"
        results.append({
            "ruleId": table[f.kind].id,
            "ruleIndex": index[f.kind],
            "level": severity,
            "message": {"text": msg + "."},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(f.path)},
                "region": sarif_region(f.line, f.column, f.where)}}],
            "partialFingerprints": {"plimsollFinding/v1": fingerprint(f)},
            "properties": {"entry": shown(f.entry), "chain": shown(f.chain), "where": f.where,
                           "via": chains, "sets": [shown(s) for s in f.sets],
                           "also": [shown(a) for a in f.also]},
        })
    notes = [{"level": "note", "message": {"text": shown(n)}} for n in result.notes]
    return sarif_log(
        [sarif_rule(r, severity) for r in table.values()], results,
        "tripwire" if tripwire else "ship-scan",
        invocations=[{"executionSuccessful": True, "toolExecutionNotifications": notes}],
        properties={"scanned": {"files": result.files, "bytes": result.bytes}})
