"""Every artifact the records determine, from the bundle's bytes: the one road for run and verify.

`squeeze run` writes what `derive` returns; `squeeze verify` calls `derive` on the bundle it is
given and compares bytes. Nothing here reads a clock, the job folder, or a sandbox.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from plimsoll_ci.attest.keys import PublicKey
from plimsoll_ci.squeeze import records, report_html, report_md
from plimsoll_ci.squeeze import result as result_mod
from plimsoll_ci.squeeze.plan import unseen_section

BUNDLE = "bundle.intoto.jsonl"
BUNDLE_GZ = "bundle.intoto.jsonl.gz"
PUBLIC_KEY = "harness.pub"
RUN = "run.json"
REVEALS = {"fresh": "fresh.json", "held_out": "held-out.json"}  # the unseen set's reveal
DERIVED = ("result.json", "evidence.json", "report.md", "report.html")  # and one of REVEALS
SETS = "sets"  # the more fresh sets: sets/1, sets/2, ... (`fresh_sets.py`)
SET_FORMAT = "plimsoll-squeeze-set/1"


class Derived(NamedTuple):
    """The derived artifacts by file name (None when the records do not verify), and the read."""

    files: dict[str, str] | None
    read: records.Read
    problems: tuple[str, ...] = ()  # of the fresh sets (`sets/I/...: why`)


def derive(bundle_bytes: bytes, public: PublicKey, sets: dict[int, bytes] | None = None
           ) -> Derived:
    """Verify and read the bundle (and the bundle of each fresh set its job section names, by
    set number), then render every derived artifact from their records."""
    read = records.read(bundle_bytes, public)
    if read.problems or read.job is None:
        return Derived(None, read)
    count = read.job.get("fresh_sets", 0)
    files: dict[str, str] = {}
    problems: list[str] = []
    set_reads = []
    sets = sets or {}
    for n in sorted(set(sets) - set(range(1, count + 1))):
        problems.append(f"{SETS}/{n}: not one of the run's {count} fresh sets")
    for n in range(1, count + 1):
        where = f"{SETS}/{n}"
        if n not in sets:
            problems.append(f"{where}/{BUNDLE}: missing (the records say the run flew {count} "
                            "more fresh sets)")
            continue
        one = derive_set(sets[n], public, n, count, read.job)
        problems += [f"{where}/{BUNDLE}: {p}" for p in one.problems]
        files.update({f"{where}/{name}": text for name, text in one.files.items()})
        set_reads.append(one.read)
    if problems:
        return Derived(None, read, tuple(problems))
    result, evidence = result_mod.compute(read, set_reads)
    kind, _section = unseen_section(read.job)
    return Derived({**files,
        REVEALS[kind]: result_mod.dumps(read.reveal),
        "result.json": result_mod.dumps(result),
        "evidence.json": result_mod.dumps(evidence),
        "report.md": report_md.render(result, evidence),
        "report.html": report_html.render(result, evidence),
    }, read)


class SetDerived(NamedTuple):
    """What one set's bundle gives: its files, its read, and the problems found."""

    files: dict[str, str]
    read: records.Read
    problems: list[str]


def derive_set(data: bytes, public: Any, index: int, count: int, job: dict[str, Any]
               ) -> SetDerived:
    """Verify and read set `index`'s bundle against the run's job section; its files."""
    read = records.read(data, public)
    problems = list(read.problems)
    if read.job is not None and not problems:
        want = {k: v for k, v in job.items() if k not in ("sessions", "fresh_sets", "fresh")}
        want["plan"] = [g for g in job["plan"] if g[1] == "loop"]
        want["fresh_set"] = {"index": index, "of": count}
        have = {k: v for k, v in read.job.items() if k != "fresh"}
        if have != want:
            problems.append(f"its job section is not the run's for set {index} of {count} "
                            "(a set of another run, or sets swapped?)")
        if read.job["fresh"].get("commitment") == job["fresh"].get("commitment"):
            problems.append("it flew the run's own fresh set, not a set of its own")
    if problems:
        return SetDerived({}, read, problems)
    assert read.job is not None  # (records that verify name their job)
    doc = {"format": SET_FORMAT, "set": index, "of": count,
           "fresh_commitment": read.job["fresh"]["commitment"],
           "loops": [{"name": r.grading.group, "controller": r.grading.controller,
                      "practice": {"landed": r.practice.landed, "total": r.practice.total},
                      "fresh": {"landed": r.fresh.landed, "total": r.fresh.total},
                      "record": r.result_sha256} for r in read.records]}
    return SetDerived({"fresh.json": result_mod.dumps(read.reveal),
                       "result.json": result_mod.dumps(doc)}, read, [])

