"""The one redactor: what any report prints never carries a withheld (or sealed) value.

A value may sit in something that is itself printed: a shipped file or folder name, an archive
member's name in a decode chain, a JSON key in a pointer, a header, form field or multipart part
name, a note that quotes any of them. `Redactor.text` shows such a text in three passes:

1. tokens: every text the scan found a value in as a name (`seed-3107713414.json` carries the
   token `3107713414`, an encoded name is a token whole) is replaced wherever it appears, so the
   rest stays readable: `seed-[withheld].json`;
2. segments: every part between separators (`/`, ` > `, `: `, ` (`, `)`) that still carries a
   value, also encoded, is withheld whole, and the kind of place stays readable: `header
   [withheld]`, `field 0 [withheld]`, `part [withheld] filename`. A JSON key in a pointer is
   redacted on its decoded segments and then escaped again (`/runs~1[withheld]~1log`), so a
   pointer escape (`~1`, `~0`) never glues a character onto a value and hides it;
3. the whole: a value across separators is in no one segment, so a text that still carries one
   is withheld whole.

`result` redacts every path, chain, detail and note of a `ScanResult`, having first looked at
every part of them (decoded pointer keys included) once, so what is shown does not depend on the
order texts are shown in. The ship scan, history (a layer numbering withheld names) and the
tripwire all print through this class. It imports nothing of the engine (the scanner is handed
in) nor of the session: it reads only the result types (`results`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plimsoll_ci.engine import Scanner
    from plimsoll_ci.shipscan.results import ScanResult

REDACTED = "[withheld]"

# What separates the parts of a printed path, decode chain, place or note.
PRINTED_SEPARATORS = re.compile(r"(/| > |: | \(|\))")
# Places that print a name (the tripwire's): the words around the name say what kind of place it is.
_NAMED_PLACE = re.compile(r"(header |part |field \d+ |line \d+ )(.+?)( name| filename)?", re.S)


def pointer_escape(key: str) -> str:
    """One JSON pointer reference token (RFC 6901: `~` is `~0`, then `/` is `~1`)."""
    return key.replace("~", "~0").replace("/", "~1")


def pointer_unescape(token: str) -> str:
    """A JSON key from its pointer reference token (RFC 6901: `~1` is `/`, then `~0` is `~`)."""
    return token.replace("~1", "/").replace("~0", "~")


def _parts(text: str) -> list[str]:
    """The parts of `text` a scan looks at: its segments, and a pointer key's decoded ones."""
    out = []
    for i, seg in enumerate(PRINTED_SEPARATORS.split(text)):
        if i % 2 == 0:
            out.append(seg)
            if "~" in seg:
                out += pointer_unescape(seg).split("/")
    return out


class Redactor:
    """Shows printed text (a path, a decode chain, a place, a detail, a note) with everything
    that carries a value redacted (the passes are in this module's docstring)."""

    def __init__(self, scanner: Scanner) -> None:
        self.scanner = scanner
        self.tokens: set[str] = set()
        self._clean: dict[str, bool] = {}
        self._done: dict[str, str] = {}
        self._order: list[str] = []
        self._known = -1  # how many tokens `_order` was sorted from

    def add(self, tokens: Iterable[str]) -> None:
        """Texts to show redacted wherever they appear."""
        self.tokens.update(t for t in tokens if t)

    def look(self, texts: Iterable[str]) -> None:
        """Look at every part of `texts` at once (one joined engine pass): a value found in a
        part makes its text a token before anything is shown."""
        self.scanner.prime_names(p for t in texts for p in _parts(t))
        for t in texts:
            for p in _parts(t):
                self._carries(p)
        self.add(self.scanner.redact_tokens)

    def text(self, text: str) -> str:
        """`text` with every value-carrying token, segment (and, across segments, the whole)
        replaced by `[withheld]`."""
        known = len(self.tokens) + len(self.scanner.redact_tokens)
        if known != self._known:  # tokens were added (by a caller, or by the scanner's names)
            self._order = sorted(self.tokens | self.scanner.redact_tokens, key=len, reverse=True)
            self._known = known
            self._done.clear()
        done = self._done.get(text)
        if done is not None:
            return done
        out = text
        for tok in self._order:
            if tok in out:
                out = out.replace(tok, REDACTED)
        parts = PRINTED_SEPARATORS.split(out)
        out = "".join(p if i % 2 else self._segment(p) for i, p in enumerate(parts))
        if out != REDACTED and self.scanner.scan_text(out, ""):
            out = REDACTED  # a value across separators is in no one segment
        self._done[text] = out
        return out

    def _carries(self, part: str) -> bool:
        if part not in self._clean:
            # scan_name undoes one layer of encoding as well: an encoded value is redacted too
            self._clean[part] = not part.strip() or not self.scanner.scan_name(part)
        return not self._clean[part]

    def _segment(self, seg: str) -> str:
        key = pointer_unescape(seg) if "~" in seg else seg
        if not self._carries(seg) and (key == seg or not self._carries(key)):
            return seg
        if key != seg:  # a JSON key in a pointer: redact its own parts, then escape again
            out = "~1".join(REDACTED if self._carries(p) else pointer_escape(p)
                            for p in key.split("/"))
            return REDACTED if self._carries(pointer_unescape(out)) else out
        m = _NAMED_PLACE.fullmatch(seg)
        if m and not self._carries(m.group(1) + (m.group(3) or "")):
            return m.group(1) + REDACTED + (m.group(3) or "")
        return REDACTED

    def result(self, result: ScanResult) -> ScanResult:
        """`result` with every path, chain, detail and note redacted."""
        texts = [t for f in result.findings
                 for t in (f.path, f.chain, f.detail, *f.via, *f.sets, *f.also)] \
            + list(result.notes)
        self.look(texts)
        return result._replace(
            findings=[f._replace(path=self.text(f.path), chain=self.text(f.chain),
                                 detail=self.text(f.detail),
                                 via=tuple(self.text(c) for c in f.via),
                                 sets=tuple(self.text(s) for s in f.sets),
                                 also=tuple(self.text(a) for a in f.also))
                      for f in result.findings],
            notes=[self.text(n) for n in result.notes])
