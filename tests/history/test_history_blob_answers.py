"""What a scanning task answers: its clean blobs as (id, size) pairs, its blobs with findings or
notes as verdicts, and its missing blobs by id (most blobs are clean, and a pair pickles and loads
in a fraction of a verdict record's cost). Taken into the blob cache, the answer leaves the cache
as one `put` per verdict would, and a missing blob is a note naming it. A replay with no worker
never imports the executors."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

from kit.history import LEAK, GitRepo, make_set

from plimsoll_ci import withheld
from plimsoll_ci.git import open_repo
from plimsoll_ci.history import blobscan
from plimsoll_ci.history.cache import ScanCache
from plimsoll_ci.history.progress import Progress
from plimsoll_ci.history.records import Notes
from plimsoll_ci.shipscan.scan import Limits, Scanner

MISSING = "1" * 40


def _blobs(repo: GitRepo) -> dict[str, str]:
    repo.write("clean.txt", "nothing to see\n" * 40)
    repo.write("empty.txt", "")
    repo.write("seed.txt", f"seed = {LEAK}\n")
    repo.write("b64.txt", base64.b64encode(f"the seed {LEAK}".encode()).decode() + "\n")
    repo.write("other.txt", "still clean\n")
    repo.git("add", "-A")
    ls = repo.git("ls-files", "-s").splitlines()
    return {line.split("\t")[1]: line.split()[1] for line in ls}


def _scanner(tmp_path: Path) -> Scanner:
    return Scanner(withheld.load(make_set(tmp_path)), Limits())


def test_a_task_answers_clean_blobs_as_sizes_and_the_rest_as_verdicts(
        tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    oids = _blobs(repo)
    blobscan._open_worker(_scanner(tmp_path), open_repo(str(repo.path)), 1 << 20)
    try:
        order = [oids["clean.txt"], oids["seed.txt"], MISSING, oids["empty.txt"],
                 oids["b64.txt"], oids["other.txt"]]
        clean, found, missing = blobscan._scan_blobs(order)
    finally:
        blobscan._WORKER.pop("cat").close()
    assert clean == [(oids["clean.txt"], 600), (oids["empty.txt"], 0), (oids["other.txt"], 12)]
    assert [oid for oid, _ in found] == [oids["seed.txt"], oids["b64.txt"]]
    assert all(v.findings and v.size for _, v in found)
    assert missing == [MISSING]


def test_an_answer_taken_leaves_the_cache_as_a_put_of_each_verdict_would(
        tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    oids = _blobs(repo)
    scanner = _scanner(tmp_path)
    blobscan._open_worker(scanner, open_repo(str(repo.path)), 1 << 20)
    try:
        answer = blobscan._scan_blobs([*oids.values(), MISSING])
    finally:
        blobscan._WORKER.pop("cat").close()
    each = ScanCache(str(tmp_path / "each"), "k" * 64)
    clean, found, _ = answer
    for oid, size in clean:
        each.put("blob:" + oid, blobscan.Verdict((), (), size))
    for oid, verdict in found:
        each.put("blob:" + oid, verdict)
    each.save()

    class _Session:  # what `BlobScans` reads of a replay's session
        cache = ScanCache(str(tmp_path / "taken"), "k" * 64)
        notes = Notes()

    scans = blobscan.BlobScans.__new__(blobscan.BlobScans)
    scans.cache, scans.notes, scans.progress = _Session.cache, _Session.notes, Progress(False)
    scans.labels = {MISSING: "viewer/gone.txt"}
    scans._take(answer)
    _Session.cache.save()
    saved = [json.loads(p.read_text()) for p in (tmp_path / "each", tmp_path / "taken")
             for p in sorted(p.iterdir())]
    assert saved[0] == saved[1] and saved[0]
    (note,) = _Session.notes.all()
    assert "viewer/gone.txt" in note and MISSING[:12] in note and "missing" in note


PROBE = """
import json, sys
from plimsoll_ci import history, withheld
report = history.replay(sys.argv[1], withheld.load(sys.argv[2]),
                        history.Options(jobs=int(sys.argv[3]), progress=False))
print(json.dumps([len(report.entries), "concurrent.futures" in sys.modules]))
"""


def test_a_replay_without_workers_never_imports_the_executors(
        globrepo: GitRepo, tmp_path: Path) -> None:
    globrepo.commit("one task", 1)
    globrepo.write("tasks/drone/seed.txt", f"{LEAK}\n")
    globrepo.commit("a leak", 2)
    wset = make_set(tmp_path)

    def probe(jobs: int) -> list:
        out = subprocess.run([sys.executable, "-c", PROBE, str(globrepo.path), str(wset),
                              str(jobs)], capture_output=True, text=True, check=True).stdout
        return json.loads(out)

    assert probe(1) == [1, False]  # cold, one job: scanned here
    assert probe(2) == [1, False]  # warm: every blob known, no worker
