"""Keeping a history report safe to publish: a shipped name that carries a withheld value is shown
as `[withheld name N]` wherever it would appear.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from plimsoll_ci.history.cache import Row
from plimsoll_ci.history.records import EntryHistory, Occurrence, shown

_MEMBER_NAME = re.compile(r"(?:zip|tar) member (.+?) \((?:file|folder) name")


class Redactor:
    """A file or folder name that carries a withheld value is itself the value: reports show
    `[withheld name N]` in its place, so a report stays safe to publish.
    """

    def __init__(self, names: dict[str, list[Row]], contents: Iterable[list[Row]] = ()) -> None:
        flagged = set()
        for rows in names.values():
            for r in rows:
                if len(r) > 7 and isinstance(r[7], str) and r[7]:
                    flagged.add(shown(r[7]))
        for rows in contents:  # an archive member's name is shown in decode chains: whole
            for r in rows:
                m = _MEMBER_NAME.search(r[2]) if r[5] == "name" else None
                if m:
                    flagged.add(m.group(1))
        self.names = {c: f"[withheld name {i}]" for i, c in enumerate(sorted(flagged), 1)}
        self._order = sorted(self.names, key=len, reverse=True)

    def text(self, s: str) -> str:
        """`s` with every flagged name replaced."""
        for comp in self._order:
            if comp in s:
                s = s.replace(comp, self.names[comp])
        return s

    def occ(self, occ: list[Occurrence]) -> list[Occurrence]:
        """Occurrences with their paths and decode chains redacted."""
        if not self.names:
            return occ
        return [o._replace(path=self.text(o.path), chain=self.text(o.chain)) for o in occ]

    def entry(self, e: EntryHistory) -> EntryHistory:
        """An entry's windows and commits, redacted."""
        if not self.names:
            return e
        return e._replace(
            windows=[w._replace(first_findings=self.occ(w.first_findings)) for w in e.windows],
            commits=[(c, self.occ(occ)) for c, occ in e.commits])
