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


def derive(bundle_bytes: bytes, public: PublicKey) -> Derived:
    """Verify and read the bundle, then render every derived artifact from its records."""
    read = records.read(bundle_bytes, public)
    if read.problems or read.job is None:
        return Derived(None, read)
    result, evidence = result_mod.compute(read)
    kind, _section = unseen_section(read.job)
    return Derived({
        REVEALS[kind]: result_mod.dumps(read.reveal),
        "result.json": result_mod.dumps(result),
        "evidence.json": result_mod.dumps(evidence),
        "report.md": report_md.render(result, evidence),
        "report.html": report_html.render(result, evidence),
    }, read)
