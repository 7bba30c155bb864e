"""The engine imports the standard library's archive, entity and decimal modules only when it
meets an archive, an entity, a percent escape or a number: a pre-commit run over a few source
files never pays for them (together 10-15 ms of a warm hook run), and a run that meets them
reads them as before."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile

from plimsoll_ci.shipscan.scan import Scanner
from plimsoll_ci.withheld import build_set, parse

LAZY = ("html", "tarfile", "zipfile", "bz2", "lzma", "decimal", "urllib.parse")
PROBE = f"""
import json, sys
before = set(sys.modules)  # (what the interpreter's own start imported is not the engine's)
from plimsoll_ci import withheld
from plimsoll_ci.shipscan.scan import Scanner
doc, _ = withheld.build_set(values=[("v", "drone-gate-secret")])
scanner = Scanner(withheld.parse(doc))
scanner.load()
found, _ = scanner.scan_contents([("a.py", b"def fly(gate):\\n    return gate\\n" * 5000)])
print(json.dumps([len(found), sorted(m for m in {LAZY!r} if m in set(sys.modules) - before)]))
"""


def test_scanning_source_text_imports_no_archive_entity_or_decimal_module() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == [0, []]


def test_what_is_imported_on_first_use_still_finds_every_disguise() -> None:
    doc, _ = build_set(values=[("v", "drone-gate-secret"), ("n", "3107713414")])
    scanner = Scanner(parse(doc))
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as tf:
        data = b"seed 3107713414\n"
        info = tarfile.TarInfo("m.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    files = [("e.html", b"<p>drone&#45;gate&#45;secret</p>\n"),
             ("p.txt", b"q=drone%2Dgate%2Dsecret\n"),
             ("n.txt", b"t=3.107713414e9\n"),
             ("a.tar.gz", gzip.compress(tar.getvalue()))]
    found, _ = scanner.scan_contents(files)
    assert sorted((f.path, f.entry) for f in found) == [
        ("a.tar.gz", "n"), ("e.html", "v"), ("n.txt", "n"), ("p.txt", "v")]
