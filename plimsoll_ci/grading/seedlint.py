"""The seed lint: seeds a hunt would meet first, seeds a person would try, sets that give themselves
away. Pure: seeds in, findings out; a finding names where a seed sits and why, never the seed.

Rules (the Argon write-up's holes 3 and 5: smoke seeds 101-104, held-out seeds below 900 million):

- `hunt`: below the hunt horizon (default 2**32), or as close to the top of 0..2**64-1: a
  controller counting up (or down) from the end of the range meets it within its CPU budget.
- `guessable`: a number a person tries: 0-1000, repeated digits (`7777777777`, `123123123`),
  round numbers (`800000000`, powers of two), dates (`20261025`), digit runs (`123456789`),
  famous constants (pi's digits, `0xDEADBEEF`, the generator's own constant).
- `run`: three or more seeds evenly spaced (consecutive like 101, 102, 103, 104, or every k).
- `neighbours`: two seeds closer than `STREAM_DRAWS`: the generator's stream of seed s + k is the
  stream of seed s shifted by k draws, so their flights share hidden values (tested: seeds 4
  apart can start with the very same first observation).
- `low-entropy`: the whole set sits in a window narrower than the horizon: find one, find all.
- `duplicate`: the same seed twice in one set; `shared`: a seed in two sets that must not share
  (practice, smoke, fresh, held-out: every pair of sets given).
- `too-small`: fewer seeds than the set's job needs (held-out and fresh sets: 16).

All but `too-small` make a set guessable: `grade` refuses a held-out or fresh set they flag unless
weak seeds are allowed (and recorded); `too-small` is a warning there (a small set is noisy, not
guessable). `seeds lint` exits 1 on any finding.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

HORIZON = 2**32
SEED_MAX = 2**64 - 1
STREAM_DRAWS = 24  # a flight takes at most 23 draws; seeds closer than this share some
ROLES = ("held-out", "fresh", "practice", "smoke", "given")
STRICT_ROLES = ("held-out", "fresh")  # a guessable one is refused by `grade`
MIN_COUNT = {"held-out": 16, "fresh": 16}
SIZE_RULES = frozenset({"too-small"})
FIX = "draw new ones: plimsoll-ci seeds draw N -o SET.json"
# Digits people reach for: pi, e, the golden ratio, the square root of two.
_FAMOUS_DIGITS = ("31415926535897932384", "27182818284590452353", "16180339887498948482",
                  "14142135623730950488")
_FAMOUS = frozenset({0xDEADBEEF, 0xCAFEBABE, 0xFEEDFACE, 0xBAADF00D, 0xDEADC0DE, 0xC0FFEE,
                     0x8BADF00D, 8675309, 0x5EEDD20EC0A57E4B, 0x9E3779B97F4A7C15})
_DATE_FORMS = {8: ("%Y%m%d", "%d%m%Y", "%m%d%Y"), 12: ("%Y%m%d%H%M",), 14: ("%Y%m%d%H%M%S",)}


class SeedAt(NamedTuple):
    """One seed of a set and where it sits (`held.txt:3`, `seed-file:3`): the only name shown."""

    where: str
    value: int


class LintSet(NamedTuple):
    """A named set of seeds with its job (one of `ROLES`)."""

    name: str
    role: str
    seeds: tuple[SeedAt, ...]


class Finding(NamedTuple):
    """One weakness: which set, where (a line, lines, or the whole set), the rule, why, what to do."""

    set: str
    where: str
    rule: str
    why: str
    fix: str = FIX

    def __str__(self) -> str:
        return f"{self.where}: {self.rule}: {self.why}; {self.fix}"


def power_text(n: int) -> str:
    """`2^32` for a power of two, else the number with thousands separators."""
    if n > 0 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return f"{n:,}"


def _repeated(text: str) -> bool:
    # A string is a shorter block repeated exactly when it occurs inside itself doubled, less
    # the first and last character.
    return len(text) >= 4 and text in (text + text)[1:-1]


def _digit_run(text: str) -> bool:
    if len(text) < 4:
        return False
    step = (ord(text[1]) - ord(text[0])) % 10
    return step in (1, 9) and all((ord(b) - ord(a)) % 10 == step
                                  for a, b in zip(text, text[1:], strict=False))


def _date(text: str) -> bool:
    for form in _DATE_FORMS.get(len(text), ()):
        try:
            when = dt.datetime.strptime(text, form)
        except ValueError:
            continue
        if 1900 <= when.year <= 2099:
            return True
    return False


def _round(seed: int, text: str) -> bool:
    if seed >= 1024 and (seed & (seed - 1) == 0 or seed & (seed + 1) == 0):
        return True  # 2**k, 2**k - 1
    stripped = text.rstrip("0")
    return len(text) - len(stripped) >= 3 and len(stripped) <= 4


def guessable(seed: int) -> str | None:
    """Why a person would try `seed` (a phrase naming the pattern, not the seed), or None."""
    text = str(seed)
    if seed <= 1000:
        return "a number anyone tries first (0-1000)"
    if _repeated(text) or _repeated(f"{seed:x}"):
        return "repeated digits"
    if _round(seed, text):
        return "a round number"
    if _date(text):
        return "a date"
    if _digit_run(text):
        return "a run of digits (like 123456789)"
    if seed in _FAMOUS or (len(text) >= 5 and any(d.startswith(text) for d in _FAMOUS_DIGITS)):
        return "a famous constant"
    return None


def seed_reasons(seed: int, horizon: int = HORIZON) -> list[tuple[str, str]]:
    """(rule, why) for each per-seed rule `seed` breaks; empty for a good seed."""
    out = []
    if seed < horizon:
        out.append(("hunt", f"below the hunt horizon ({power_text(horizon)}): a controller "
                            "counting up from 0 meets it within a grading's CPU budget"))
    elif seed > SEED_MAX - horizon:
        out.append(("hunt", f"within {power_text(horizon)} of 2^64-1: a controller counting "
                            "down from the top meets it within a grading's CPU budget"))
    why = guessable(seed)
    if why is not None:
        out.append(("guessable", f"{why}, which a person guessing seeds tries early"))
    return out


def _lines(wheres: Sequence[str]) -> str:
    """`f.txt:1-4,7` for wheres `f.txt:1` .. `f.txt:4`, `f.txt:7` (or the wheres joined)."""
    prefix = {w.rpartition(":")[0] for w in wheres}
    tails = [w.rpartition(":")[2] for w in wheres]
    if len(prefix) != 1 or not all(t.isdigit() for t in tails):
        return ", ".join(wheres)
    nums = sorted({int(t) for t in tails})
    parts: list[str] = []
    start: int | None = nums[0]
    for a, b in zip(nums, [*nums[1:], None], strict=True):
        if b != a + 1:
            parts.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return f"{prefix.pop()}:{','.join(parts)}"


def _runs(seeds: Sequence[SeedAt]) -> list[list[SeedAt]]:
    """Maximal runs of three or more distinct seeds, sorted, with equal gaps."""
    ordered = sorted({s.value: s for s in seeds}.values(), key=lambda s: s.value)
    runs, i = [], 0
    while i + 2 < len(ordered):
        gap = ordered[i + 1].value - ordered[i].value
        j = i + 1
        while j + 1 < len(ordered) and ordered[j + 1].value - ordered[j].value == gap:
            j += 1
        if j - i >= 2:
            runs.append(ordered[i:j + 1])
            i = j
        else:
            i += 1
    return runs


def _lint_one(s: LintSet, horizon: int) -> list[Finding]:
    found = []
    first: dict[int, str] = {}
    for seed in s.seeds:
        if seed.value in first:
            found.append(Finding(s.name, seed.where, "duplicate",
                                 f"the same seed as {first[seed.value]}: a set's seeds are "
                                 "distinct", "remove one, or draw a new set"))
            continue
        first[seed.value] = seed.where
        found += [Finding(s.name, seed.where, rule, why) for rule, why in
                  seed_reasons(seed.value, horizon)]
    ordered = sorted(first.items())
    for (a, wa), (b, wb) in zip(ordered, ordered[1:], strict=False):
        if b - a < STREAM_DRAWS:
            found.append(Finding(s.name, wb, "neighbours",
                                 f"within {STREAM_DRAWS} of the seed at {wa}: the generator's "
                                 "streams overlap, so the two flights share hidden values"))
    for run in _runs(s.seeds):
        step = run[1].value - run[0].value
        kind = "consecutive" if step == 1 else "evenly spaced"
        found.append(Finding(s.name, _lines([x.where for x in run]), "run",
                             f"{len(run)} {kind} seeds: one gives away the others"))
    values = [x.value for x in s.seeds]
    if len(first) >= 2 and max(values) - min(values) < horizon:
        width = max(values) - min(values) + 1
        found.append(Finding(s.name, s.name, "low-entropy",
                             f"all {len(first)} seeds lie within a window of {width.bit_length()} "
                             f"bits (under the {power_text(horizon)} horizon): a hunt that finds "
                             "one finds the rest"))
    need = MIN_COUNT.get(s.role, 1)
    if len(s.seeds) < need:
        found.append(Finding(s.name, s.name, "too-small",
                             f"{len(s.seeds)} seed(s): a {s.role} set needs at least {need} to "
                             "measure a score (luck moves a small one)",
                             "draw more: plimsoll-ci seeds draw N -o SET.json"))
    return found


def lint(sets: Sequence[LintSet], horizon: int = HORIZON) -> list[Finding]:
    """Every finding over `sets`, each set on its own and every pair for shared seeds."""
    if not 2 <= horizon <= 2**63:
        raise ValueError(f"the hunt horizon is 2..2^63, not {horizon}")
    for s in sets:
        if s.role not in ROLES:
            raise ValueError(f"set {s.name}: role {s.role!r} is not one of {', '.join(ROLES)}")
    found: list[Finding] = []
    seen: dict[int, tuple[LintSet, str]] = {}
    for s in sets:
        found += _lint_one(s, horizon)
        mine: dict[int, str] = {}
        for seed in s.seeds:
            other = seen.get(seed.value)
            if other is not None and seed.value not in mine:
                found.append(Finding(s.name, seed.where, "shared",
                                     f"also in the {other[0].role} set {other[0].name} "
                                     f"({other[1]}): a seed belongs to one set only", FIX))
            mine.setdefault(seed.value, seed.where)
        for value, where in mine.items():
            seen.setdefault(value, (s, where))
    return found


def guessing(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that make a set guessable (all but the size rule)."""
    return [f for f in findings if f.rule not in SIZE_RULES]


def counts(findings: Iterable[Finding]) -> list[dict[str, object]]:
    """`[{"count", "rule", "set"}]` per (set, rule), sorted: how a record states findings."""
    tally: dict[tuple[str, str], int] = {}
    for f in findings:
        tally[(f.set, f.rule)] = tally.get((f.set, f.rule), 0) + 1
    return [{"count": n, "rule": rule, "set": name} for (name, rule), n in sorted(tally.items())]


def summary(findings: Sequence[Finding]) -> str:
    """`hunt 3, run 1` for a list of findings (no places, no values)."""
    tally: dict[str, int] = {}
    for f in findings:
        tally[f.rule] = tally.get(f.rule, 0) + 1
    return ", ".join(f"{rule} {n}" for rule, n in sorted(tally.items()))


def lines(findings: Sequence[Finding]) -> list[str]:
    """One line per place: its rules and reasons, then what to do (for a terminal)."""
    by_place: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by_place.setdefault((f.set, f.where), []).append(f)
    out = []
    for (_name, where), found in by_place.items():
        fixes = list(dict.fromkeys(f.fix for f in found))
        reasons = dict.fromkeys(f"{f.rule}: {f.why}" for f in found)
        out.append(f"{where}: " + "; ".join(reasons)
                   + f" -> {'; '.join(fixes)}")
    return out


_SEEDISH = re.compile(r"[0-9][0-9_]*")


def as_seed(value: str) -> int | None:
    """A value that reads as a decimal seed (`1234`, `1_234`), else None."""
    text = value.strip()
    if not _SEEDISH.fullmatch(text) or "__" in text or text.endswith("_"):
        return None
    n = int(text.replace("_", ""))
    return n if n <= SEED_MAX else None


def value_warnings(values: Iterable[tuple[str, str]]) -> list[str]:
    """The lint of a withheld set's values that read as seeds, as warnings (`withheld build`)."""
    seeds = tuple(SeedAt(eid, n) for eid, v in values if (n := as_seed(v)) is not None)
    if not seeds:
        return []
    found = [f for f in lint([LintSet("values", "given", seeds)]) if f.rule not in SIZE_RULES]
    # Each rule's first few findings one a line, then a count: a million seeds below the hunt
    # horizon are said in six lines, not a million.
    out: list[str] = []
    by_rule: dict[str, int] = {}
    for f in found:
        by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        if by_rule[f.rule] <= _SAID:
            out.append(f"seed lint: {f}")
    out += [f"seed lint: and {n - _SAID} more values break the {rule} rule"
            for rule, n in by_rule.items() if n > _SAID]
    return out


_SAID = 5  # findings of one rule said one a line before they are counted


# A flight's seed id prefix (`seed-file:3`) says which set it belongs to and what the set is for.
ROLE_OF_PREFIX = {"practice": "practice", "fresh": "fresh", "sealed": "held-out",
                  "seed-file": "held-out", "seeds": "given"}


class SeedCheck(NamedTuple):
    """What the lint found in a grading's seed sets, and what the signed record says of it."""

    findings: tuple[Finding, ...]
    allow_weak: bool
    uncommitted: int  # flights on held-out seeds no commitment covers (a seed file)
    roles: dict[str, str]  # flown set name -> role

    def record(self) -> dict[str, object]:
        """`seedCheck` of a run record (and `seed_check` of a result document)."""
        return {"allowWeak": self.allow_weak, "findings": counts(self.findings),
                "uncommitted": self.uncommitted}

    def notes(self) -> list[str]:
        """One note per flown set the lint flags, and one for flights nothing committed."""
        out = []
        by_set: dict[str, list[Finding]] = {}
        for f in self.findings:
            by_set.setdefault(f.set, []).append(f)
        for name, found in by_set.items():
            role = self.roles.get(name, "held-out")
            weak = guessing(found)
            if role in STRICT_ROLES and weak:
                what = "graded anyway: weak seeds were allowed (the signed record says so)"
            elif weak:
                what = f"noted, not refused: a {role} set is no secret"
            else:
                what = "noted: a small set is noisy, not guessable"
            out.append(f"seed lint: {name} set ({role}): {summary(found)}; {what}; "
                       "run plimsoll-ci seeds lint where the seed files live for each line")
        if self.uncommitted:
            out.append(f"nothing was committed for the {self.uncommitted} held-out flight(s): no "
                       "commitment published before grading covers their seeds, so nobody can "
                       "check later which seeds flew; commit the set first (plimsoll-ci seeds "
                       "commit) and grade with --sealed SET.commit --reveal SET.json")
        return out


def check_flights(flights: Sequence, practice: Sequence[int], allow_weak: bool = False,
                  committed: Iterable[int] = (), horizon: int = HORIZON) -> SeedCheck:
    """Lint the sets a grading flies (`flights`: `grading.seeds.Seed`s, grouped by id prefix)
    against each other and the practice set. A guessable held-out or fresh set raises BadInput
    (naming sets, places and rules, never a seed) unless `allow_weak`. `committed`: the seeds a
    commitment covers (fresh, sealed); held-out flights on other seeds count as uncommitted."""
    from plimsoll_ci.errors import BadInput

    groups: dict[str, list[SeedAt]] = {}
    for s in flights:
        groups.setdefault(s.id.rpartition(":")[0] or s.id, []).append(SeedAt(s.id, s.value))
    roles = {name: ROLE_OF_PREFIX.get(name, "held-out") for name in groups}
    sets = [LintSet(name, roles[name], tuple(seeds)) for name, seeds in groups.items()]
    if "practice" not in groups and practice:
        # Only to find a flown seed it shares; its own weaknesses are no business of this grading.
        sets.insert(0, LintSet("practice (not flown)", "practice", tuple(
            SeedAt(f"practice:{n}", v) for n, v in enumerate(practice, 1))))
    findings = tuple(f for f in lint(sets, horizon) if f.set in groups)
    refused = [f for f in guessing(findings) if roles[f.set] in STRICT_ROLES]
    if refused and not allow_weak:
        shown = "; ".join(f"{f.where}: {f.rule}: {f.why}" for f in refused[:6])
        more = f" (and {len(refused) - 6} more)" if len(refused) > 6 else ""
        raise BadInput(f"weak seeds: the seed lint flags {len(refused)} thing(s) in the held-out "
                       f"or fresh set: {shown}{more}. Nothing was flown. Draw a new set "
                       "(plimsoll-ci seeds draw), or grade anyway with --allow-weak-seeds (the "
                       "signed record will say so)")
    covered = set(committed)
    uncommitted = sum(1 for name, seeds in groups.items() if roles[name] == "held-out"
                      for s in seeds if s.value not in covered)
    return SeedCheck(findings, allow_weak, uncommitted, roles)
