"""Seed sets on disk: draw a held-out set, commit to it before grading, reveal it after, check.

    fs = seedsets.draw(64)                                # 64-bit seeds, CSPRNG, lint-clean
    seedsets.write_set("held.json", fs, bits=64)          # mode 0600, never overwrites
    c = seedsets.commitment(fs, bits=64)                  # digest, count, bits, time: publish it
    seedsets.write_public("held.commit", c.document())
    sealed = seedsets.open_sealed("held.commit", "held.json")   # BadInput unless they match
    seedsets.draw_smoke(4, avoid=practice)                # throwaway flights, fresh per session

Three files, one JSON form each (sorted keys, two-space indent, newline; seeds as decimal strings,
sorted and distinct, so a 64-bit seed survives any JSON reader):

- the set, `plimsoll-seed-set/1`: `{bits, drawn, format, salt, seeds}`: private until revealed;
- the commitment, `plimsoll-seed-commitment/1`: `{bits, commitment, committed, count, format}`,
  where `commitment` is the fresh-set commitment of `plimsoll_ci.digests` (salted SHA-256 of the sorted
  seeds): publish it before any flight; without the salt it tells nothing about a seed;
- the reveal, `plimsoll-seed-reveal/1`: `{bits, format, salt, seeds}`: publish it after.
"""

from __future__ import annotations

import datetime as dt
import hmac
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.digests import is_sha256_hex
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import MiB, read_bounded
from plimsoll_ci.grading import fresh as fresh_mod
from plimsoll_ci.grading.fresh import FreshSet
from plimsoll_ci.grading.seeds import MAX_SEEDS  # a held-out set, drawn or hand-made: 10,000
from plimsoll_ci.timestamps import is_utc_time, now_text

SET_FORMAT = "plimsoll-seed-set/1"
COMMIT_FORMAT = "plimsoll-seed-commitment/1"
REVEAL_FORMAT = "plimsoll-seed-reveal/1"
MAX_FILE_BYTES = 1 * MiB  # 10,000 seeds take ~270 KB in a set file
SMOKE_COUNT = 4


class Revealed(NamedTuple):
    """The seeds and salt of a set file or a reveal file, and the bits they were drawn with."""

    fresh: FreshSet
    bits: int
    kind: str  # "set" | "reveal"


class Commitment(NamedTuple):
    """What is published before grading: nothing in it helps guess a seed."""

    digest: str  # fresh.commit(...) of the seeds and salt
    count: int  # type: ignore[assignment]  # shadows tuple.count, on purpose
    bits: int
    committed: str  # UTC time, 2026-01-31T12:00:00Z

    def document(self) -> dict[str, Any]:
        """The commitment file's JSON object."""
        return {"bits": self.bits, "commitment": self.digest, "committed": self.committed,
                "count": self.count, "format": COMMIT_FORMAT}

    def record(self) -> dict[str, Any]:
        """The commitment as a signed run record states it (`inputs.sealedSet`)."""
        return {"bits": self.bits, "commitment": self.digest, "committedOn": self.committed,
                "count": self.count}


class SealedSet(NamedTuple):
    """A held-out set committed earlier, with its reveal checked against the commitment."""

    commitment: Commitment
    fresh: FreshSet

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds, sorted (never print them: `seeds reveal` is the one place that does)."""
        return self.fresh.seeds


def dumps(doc: dict[str, Any]) -> str:
    """The one text form of a seed-set file."""
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def draw(count: int, bits: int = fresh_mod.BITS) -> FreshSet:
    """`count` seeds of `bits` bits drawn with the CSPRNG (see `fresh.draw`); BadInput for a count
    or bits out of range."""
    if not 1 <= count <= MAX_SEEDS:
        raise BadInput(f"seeds draw {count}: draw between 1 and {MAX_SEEDS} seeds")
    try:
        return fresh_mod.draw(count, bits)
    except ValueError as e:
        raise BadInput(str(e)) from None


def set_document(fs: FreshSet, bits: int, drawn: str) -> dict[str, Any]:
    """The private set file's JSON object."""
    return {"bits": bits, "drawn": drawn, "format": SET_FORMAT, "salt": fs.salt.hex(),
            "seeds": [fresh_mod.seed_text(s) for s in fs.seeds]}


def reveal_document(fs: FreshSet, bits: int) -> dict[str, Any]:
    """The reveal file's JSON object."""
    return {"bits": bits, "format": REVEAL_FORMAT, **fresh_mod.reveal(fs)}


def commitment(fs: FreshSet, bits: int, now: dt.datetime | None = None) -> Commitment:
    """The commitment to `fs`, dated `now` (default: the clock)."""
    return Commitment(fresh_mod.commit(fs), len(fs.seeds), bits, now_text(now))


def _create(path: str | os.PathLike[str], text: str, mode: int, what: str) -> None:
    """Create `path` with `text`; never overwrite, never follow a link, nothing half-written."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        raise BadInput(f"{what} {p}: already exists; refusing to overwrite it (choose a new "
                       "path, or delete the old file yourself if you mean to)") from None
    except OSError as e:
        raise BadInput(f"{what} {p}: cannot create it ({e.strerror}); give a path in a "
                       "writable folder") from None
    try:
        if mode == 0o600:
            os.fchmod(fd, mode)  # whatever the umask: only the owner reads a seed set
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    except OSError as e:
        os.close(fd)
        p.unlink(missing_ok=True)
        raise BadInput(f"{what} {p}: cannot write it ({e.strerror}); nothing was kept") from None
    os.close(fd)


def write_set(path: str | os.PathLike[str], fs: FreshSet, bits: int,
              now: dt.datetime | None = None) -> None:
    """Write the private set file: mode 0600, refusing to overwrite anything."""
    _create(path, dumps(set_document(fs, bits, now_text(now))), 0o600, "seed set")


def write_public(path: str | os.PathLike[str], doc: dict[str, Any], what: str) -> None:
    """Write a commitment or reveal file (mode 0666 minus the umask), refusing to overwrite."""
    _create(path, dumps(doc), 0o666, what)


def _read(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    p = Path(path)
    data = read_bounded(p, MAX_FILE_BYTES, f"{what} {p}")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadInput(f"{what} {p}: not JSON; give the file `plimsoll-ci seeds` wrote") from None
    if not isinstance(doc, dict):
        raise BadInput(f"{what} {p}: not a JSON object; give the file `plimsoll-ci seeds` wrote")
    return doc


def _bits(value: Any, where: str) -> int:
    if type(value) is not int or not 1 <= value <= fresh_mod.BITS:
        raise BadInput(f"{where}: bits must be an integer 1..64")
    return value


def read_revealed(path: str | os.PathLike[str]) -> Revealed:
    """A set file or a reveal file, read strictly; BadInput naming the file and the field."""
    doc = _read(path, "seed set")
    fmt = doc.get("format")
    keys = {SET_FORMAT: {"bits", "drawn", "format", "salt", "seeds"},
            REVEAL_FORMAT: {"bits", "format", "salt", "seeds"}}.get(fmt) \
        if isinstance(fmt, str) else None  # (a list or an object as the format cannot key it)
    if keys is None:
        hint = (" (that is a commitment: it holds no seeds; give the set or its reveal)"
                if fmt == COMMIT_FORMAT else "")
        raise BadInput(f"seed set {path}: format is not {SET_FORMAT} or {REVEAL_FORMAT}{hint}")
    if set(doc) != keys:
        raise BadInput(f"seed set {path}: must have exactly the fields {', '.join(sorted(keys))}")
    if fmt == SET_FORMAT and not is_utc_time(doc["drawn"]):
        raise BadInput(f"seed set {path}: drawn must be a UTC time like 2026-01-31T12:00:00Z")
    bits = _bits(doc["bits"], f"seed set {path}")
    if isinstance(doc["seeds"], list) and len(doc["seeds"]) > MAX_SEEDS:
        raise BadInput(f"seed set {path}: {len(doc['seeds'])} seeds, over the bound of "
                       f"{MAX_SEEDS} (a held-out set is as large as a drawn one at most)")
    try:
        fs = fresh_mod.from_reveal({"salt": doc["salt"], "seeds": doc["seeds"]})
    except ValueError as e:
        raise BadInput(f"seed set {path}: {e}") from None
    for n, seed in enumerate(fs.seeds, 1):
        if seed >= 2**bits:
            raise BadInput(f"seed set {path}: seed {n} does not fit in its {bits} bits")
    return Revealed(fs, bits, "set" if fmt == SET_FORMAT else "reveal")


def read_commitment(path: str | os.PathLike[str]) -> Commitment:
    """A commitment file, read strictly; BadInput naming the file and the field."""
    doc = _read(path, "commitment")
    keys = {"bits", "commitment", "committed", "count", "format"}
    if doc.get("format") != COMMIT_FORMAT:
        raise BadInput(f"commitment {path}: format is not {COMMIT_FORMAT}; give the file "
                       "`plimsoll-ci seeds commit` wrote")
    if set(doc) != keys:
        raise BadInput(f"commitment {path}: must have exactly the fields {', '.join(sorted(keys))}")
    if not is_sha256_hex(doc["commitment"]):
        raise BadInput(f"commitment {path}: commitment must be 64 lowercase hex digits")
    if type(doc["count"]) is not int or not 1 <= doc["count"] <= MAX_SEEDS:
        raise BadInput(f"commitment {path}: count must be an integer from 1 to {MAX_SEEDS}")
    if not is_utc_time(doc["committed"]):
        raise BadInput(f"commitment {path}: committed must be a UTC time like "
                       "2026-01-31T12:00:00Z")
    return Commitment(doc["commitment"], doc["count"], _bits(doc["bits"], f"commitment {path}"),
                      doc["committed"])


def mismatches(c: Commitment, revealed: Revealed) -> list[str]:
    """Every way `revealed` fails to be the set `c` commits to (empty: it is); never a seed."""
    problems = []
    fs = revealed.fresh
    if len(fs.seeds) != c.count:
        problems.append(f"the commitment is to {c.count} seeds, the reveal holds {len(fs.seeds)}")
    if revealed.bits != c.bits:
        problems.append(f"the commitment says {c.bits} bits, the reveal {revealed.bits}")
    outside = [n for n, s in enumerate(fs.seeds, 1) if s >= 2**c.bits]
    if outside:
        problems.append(f"{len(outside)} seed(s) do not fit in the committed {c.bits} bits")
    if not hmac.compare_digest(fresh_mod.commit(fs), c.digest):
        problems.append("its seeds and salt do not hash to the commitment (a seed or the salt "
                        "differs)")
    return problems


def open_sealed(commit_path: str | os.PathLike[str], reveal_path: str | os.PathLike[str],
                now: dt.datetime | None = None) -> SealedSet:
    """The held-out set that `reveal_path` (its set file or reveal) reveals, checked against the
    commitment at `commit_path` and against the clock (a commitment dated after `now` is refused:
    a grading's record must show it came first). BadInput naming every mismatch."""
    c = read_commitment(commit_path)
    revealed = read_revealed(reveal_path)
    problems = mismatches(c, revealed)
    if problems:
        raise BadInput(f"reveal {reveal_path} does not match commitment {commit_path}: "
                       f"{'; '.join(problems)}. Nothing was flown; give the set that was "
                       "committed to")
    current = now_text(now)
    if c.committed > current:
        raise BadInput(f"commitment {commit_path}: dated {c.committed}, after now ({current}); "
                       "a commitment must come before the grading (check the clocks)")
    return SealedSet(c, revealed.fresh)


def draw_smoke(count: int = SMOKE_COUNT, avoid: Iterable[int] = ()) -> tuple[int, ...]:
    """Smoke seeds for one session's throwaway flights: drawn fresh with the CSPRNG (never a fixed
    list a task text could carry), none of them in `avoid` (practice, fresh, held-out seeds)."""
    banned = set(avoid)
    for _attempt in range(100):
        seeds = draw(count).seeds
        if not banned.intersection(seeds):
            return seeds
    raise BadInput("could not draw smoke seeds outside the sets to avoid")
