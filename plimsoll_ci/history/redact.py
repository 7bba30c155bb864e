"""Keeping a history report safe to publish and to print: every repository string it shows (paths,
decode chains, set names, authors, notes) passes through `Redactor.say`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from plimsoll_ci.history.records import CommitInfo, EntryHistory, Occurrence, shown
from plimsoll_ci.shipscan import scan
from plimsoll_ci.shipscan.scan import Finding

_MEMBER_NAME = re.compile(r"(?:zip|tar) member (.+?) \((?:file|folder) name")


class Redactor:
    """Redacts what a report would otherwise print of a withheld value, and escapes the rest.

    - A file or folder name that carries a withheld value is itself the value: it is shown as
      `[withheld name N]` wherever it appears (`names`: findings in shipped names, whose paths
      end at the file or folder name that carries the entry; `contents`: content findings, whose
      decode chains name archive members).
    - Any other repository string (an author, a set name, a config key quoted in a note) is
      searched for withheld values by `scanner`, and what it finds is shown as `[withheld]`.
    - Control characters and non-UTF-8 bytes are escaped (`records.shown`).
    """

    def __init__(self, names: Iterable[Finding], contents: Iterable[Finding],
                 scanner: Any) -> None:
        flagged = set()
        for f in names:  # the file or folder name that carries an entry
            flagged.add(f.path.rstrip("/").split("/")[-1])
        for f in contents:  # an archive member's name is shown in decode chains: whole
            m = _MEMBER_NAME.search(f.chain) if f.where == "name" else None
            if m:
                flagged.add(m.group(1))
        number = {c: i for i, c in enumerate(sorted({shown(c) for c in flagged}), 1)}
        self.names: dict[str, str] = {}  # a flagged name, as stored and as shown -> its stand-in
        for c in flagged:
            self.names[c] = self.names[shown(c)] = f"[withheld name {number[shown(c)]}]"
        self._order = sorted(self.names, key=len, reverse=True)
        self.scanner = scanner
        self._values = scan.Redactor(scanner)
        self._said: dict[str, str] = {}

    def say(self, s: str) -> str:
        """`s` as a report may show it: flagged names replaced, withheld values replaced, control
        characters and non-UTF-8 bytes escaped.
        """
        out = self._said.get(s)
        if out is None:
            out = s
            for comp in self._order:
                if comp in out:
                    out = out.replace(comp, self.names[comp])
            self.scanner.scan_name(out)  # values (and their encodings) become redact tokens
            out = shown(self._values.text(out))
            self._said[s] = out
        return out

    def occ(self, occ: list[Occurrence]) -> list[Occurrence]:
        """Occurrences with their set names, paths and decode chains made safe to show."""
        return [o._replace(set=self.say(o.set), path=self.say(o.path), chain=self.say(o.chain),
                           via=tuple(self.say(c) for c in o.via))
                for o in occ]

    def commit(self, c: CommitInfo) -> CommitInfo:
        """A commit with its author made safe to show."""
        return c._replace(author=self.say(c.author))

    def entry(self, e: EntryHistory) -> EntryHistory:
        """An entry's windows and commits made safe to show."""
        return e._replace(
            windows=[w._replace(first=self.commit(w.first), first_findings=self.occ(w.first_findings),
                                fixed=self.commit(w.fixed) if w.fixed else None)
                     for w in e.windows],
            commits=[(self.commit(c), self.occ(occ)) for c, occ in e.commits])
