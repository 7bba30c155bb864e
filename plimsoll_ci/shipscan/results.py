"""What a ship scan gives: a typed `ScanResult` (findings, never values) and the `Verdict` on
one content or one shipped path's names, with the rules every road shares about them.

- `decide_mode` alone decides refuse or warn; the result carries that mode to the renderers.
- A path is shown one way everywhere (`shown_path`): `/`-separated, no `./`, no doubled `/`.
- `combine` makes one result of several (the commits of a push or a pull request).

These stand apart from the session (`plimsoll_ci.shipscan.scan`), so what only reads results
(the redactor, the reports, baselines) does not import the scanning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from plimsoll_ci.engine.records import Finding
from plimsoll_ci.errors import BadInput

__all__ = ["MODES", "ScanResult", "Verdict", "combine", "decide_mode", "shown_path"]

MODES = ("refuse", "warn")


class ScanResult(NamedTuple):
    """What a ship scan found, what it scanned, and the mode it ran in (refuse or warn)."""

    findings: list[Finding]
    notes: list[str]
    files: int
    bytes: int
    mode: str = "refuse"

    @property
    def refused(self) -> bool:
        """True when the scan refuses what ships: a finding in refuse mode (exit 1)."""
        return bool(self.findings) and self.mode == "refuse"


def decide_mode(*asked: str | None, override: str | None = None) -> str:
    """The one refuse/warn decision: `override` (the command line's `--mode`) when given, else
    warn when any of `asked` (the config's mode, the withheld set's mode) is warn, else refuse."""
    for m in (override, *asked):
        if m is not None and m not in MODES:
            raise BadInput(f"mode {m!r}: use refuse or warn")
    if override is not None:
        return override
    return "warn" if "warn" in asked else "refuse"


def shown_path(path: str) -> str:
    """A path as every report shows it: no `.` segments, no doubled `/` (`./a//b` -> `a/b`)."""
    if "/." not in path and "//" not in path and not path.startswith("./"):
        return path
    parts = [p for p in path.split("/") if p not in ("", ".")]
    lead = "/" if path.startswith("/") else ""
    tail = "/" if path.endswith("/") and parts else ""
    return lead + "/".join(parts) + tail if parts else (lead or ".")


class Verdict(NamedTuple):
    """What scanning one content (or one shipped path's names) found, placed nowhere yet.

    Content findings have an empty path; name findings carry the shipped path (or folder).
    Notes have no `path: ` prefix. `size` is the content's full length (0 for names).
    `tokens` are texts a report must show redacted (a member name that carries a value).
    """

    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    size: int
    tokens: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """Nothing found and nothing to note."""
        return not self.findings and not self.notes


def combine(parts: Sequence[tuple[str, ScanResult]]) -> ScanResult:
    """One result from several scans (the commits of a push or a pull request): a finding is
    kept once, its detail naming where it was first seen when there are several parts; files and
    bytes add up; the mode is `decide_mode` over the parts' modes."""
    seen: set[tuple] = set()
    findings: list[Finding] = []
    notes: list[str] = []
    for where, r in parts:
        for f in r.findings:
            k = (f.path, f.line, f.column, f.chain, f.entry, f.kind, f.where)
            if k in seen:
                continue
            seen.add(k)
            if where and not f.detail:
                f = f._replace(detail=f"first seen in {where}")
            findings.append(f)
        notes += [n for n in r.notes if n not in notes]
    return ScanResult(findings, notes, sum(r.files for _, r in parts),
                      sum(r.bytes for _, r in parts), decide_mode(*(r.mode for _, r in parts)))
