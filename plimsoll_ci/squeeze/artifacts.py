"""Every artifact the records determine, from the bundle's bytes: the one road for run and verify.

`squeeze run` writes what `derive` returns; `squeeze verify` calls `derive` on the bundle it is
given and compares bytes. Nothing here reads a clock, the job folder, or a sandbox.
"""

from __future__ import annotations

from typing import NamedTuple

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


class Derived(NamedTuple):
    """The derived artifacts by file name (None when the records do not verify), and the read."""

    files: dict[str, str] | None
    read: records.Read
    problems: tuple[str, ...] = ()  # of the fresh sets (`sets/I/...: why`)


def derive(bundle_bytes: bytes, public: PublicKey, sets: dict[int, bytes] | None = None
           ) -> Derived:
    """Verify and read the bundle (and the bundle of each fresh set its job section names, by
    set number), then render every derived artifact from their records."""
    from plimsoll_ci.squeeze import fresh_sets

    read = records.read(bundle_bytes, public)
    if read.problems or read.job is None:
        return Derived(None, read)
    count = read.job.get("fresh_sets", 0)
    files: dict[str, str] = {}
    problems: list[str] = []
    set_reads = []
    for n in sorted(set(sets or {}) - set(range(1, count + 1))):
        problems.append(f"{fresh_sets.SETS}/{n}: not one of the run's {count} fresh sets")
    for n in range(1, count + 1):
        where = f"{fresh_sets.SETS}/{n}"
        if n not in (sets or {}):
            problems.append(f"{where}/{BUNDLE}: missing (the records say the run flew {count} "
                            "more fresh sets)")
            continue
        one = fresh_sets.derive(sets[n], public, n, count, read.job)
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
