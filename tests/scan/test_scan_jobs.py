"""The ship scan on every core: `--jobs N` gives the same findings and notes, in the same order,
as one process; workers start only when there are several batches to scan."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.scan import DECIMAL, SEED, TEXT, KeepAll, make_set, zip_bytes

from plimsoll_ci.shipscan import report, scan
from plimsoll_ci.shipscan.scan import Item, Limits, ShipScan, scan_paths
from plimsoll_ci.withheld import build_set, dumps

WORDS = "drone gate wind thrust pitch roll yaw motor payload course hover land".split()


def _filler(rng: random.Random, size: int) -> bytes:
    lines, n = [], 0
    while n < size:
        line = f"{rng.choice(WORDS)}_{rng.randrange(10**6)} = {rng.random():.6f}  # {rng.choice(WORDS)}"
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines).encode() + b"\n"


def make_tree(root: Path, files: int, size: int) -> Path:
    """A shipped tree with findings in many files: plain, base64-encoded and archived values,
    names that carry one, and files of many sizes (some over a small file bound)."""
    rng = random.Random(5)
    for i in range(files):
        body = _filler(rng, size // 2 + rng.randrange(size))
        cut = rng.randrange(len(body))
        cut = body.rfind(b"\n", 0, cut) + 1
        planted = b""
        if i % 3 == 0:
            planted += f"seed = {SEED}\n".encode()
        if i % 7 == 0:
            planted += b"blob = " + base64.b64encode(f"seed {SEED}".encode()) + b"\n"
        if i % 5 == 0:
            planted += f"time = {DECIMAL}  # {TEXT}\n".encode()
        folder = root / f"part{i % 9}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 13 == 0:
            data = zip_bytes([(f"seed-{SEED}.json", b"{}"), ("notes.txt", body[:cut] + planted)])
            (folder / f"bundle{i:04d}.zip").write_bytes(data)
        else:
            (folder / f"f{i:04d}.py").write_bytes(body[:cut] + planted + body[cut:])
    (root / "runs" / SEED).mkdir(parents=True)
    (root / "runs" / SEED / "log.txt").write_text("t=1\n")
    return root


def test_two_workers_give_the_same_findings_and_notes_in_the_same_order_as_one(
        tmp_path, monkeypatch, spy_start, leak) -> None:
    tree = make_tree(tmp_path / "tree", files=150, size=6000)
    monkeypatch.setattr(scan, "BATCH_BYTES", 16 * 1024)  # many batches, taken out of turn
    wset = make_set()
    limits = Limits(max_file_bytes=5000)  # a note on many files
    one = scan_paths([str(tree)], wset, limits, jobs=1)
    assert spy_start == []
    two = scan_paths([str(tree)], wset, limits, jobs=2)
    assert spy_start == [2]  # the workers did run
    assert two == one
    assert report.render(two, "json") == report.render(one, "json")
    leak.text(report.render(two, "json"))
    files_with = {f.path for f in one.findings}
    assert len(files_with) > 40 and len(one.notes) > 40
    assert {f.where for f in one.findings} == {"content", "name"}
    assert any(">" in f.chain for f in one.findings)  # decoded and archived values too


def test_a_cache_sees_the_same_verdicts_whatever_the_number_of_workers(monkeypatch,
                                                                       spy_start) -> None:
    monkeypatch.setattr(scan, "BATCH_BYTES", 8 * 1024)
    rng = random.Random(3)
    items = [Item(f"f{i}.txt", _filler(rng, 3000) + (f"x={SEED}\n".encode() if i % 4 else b""))
             for i in range(60)]
    items += [Item("copy.txt", items[1].data)]  # one content under two labels: one verdict

    wset = make_set()
    caches = [KeepAll(), KeepAll()]
    results = [ShipScan(wset, cache=c, jobs=j).scan(items) for c, j in zip(caches, (1, 2), strict=True)]
    assert spy_start == [2]
    assert results[0] == results[1] and len(results[0].findings) == 46
    assert caches[0].store == caches[1].store


def test_a_scan_of_a_few_batches_starts_no_worker(tmp_path, monkeypatch, spy_start) -> None:
    tree = make_tree(tmp_path / "tree", files=20, size=2000)
    size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
    monkeypatch.setattr(scan, "BATCH_BYTES", size // scan.PARALLEL_FROM + 1)  # too few full
    result = scan_paths([str(tree)], make_set(), jobs=2)
    assert spy_start == [] and result.findings
    monkeypatch.setattr(scan, "BATCH_BYTES", size // (scan.PARALLEL_FROM + 2))
    assert scan_paths([str(tree)], make_set(), jobs=2) == result
    assert spy_start == [2]


def test_scan_json_output_is_byte_for_byte_the_same_for_jobs_1_and_2(tmp_path, leak) -> None:
    # more batches than are judged before workers start, so two workers really split them
    tree = make_tree(tmp_path / "tree", files=1000, size=40_000)
    scanned = sum(min(p.stat().st_size, 50_000) for p in tree.rglob("*") if p.is_file())
    assert scanned > (scan.PARALLEL_FROM + 1) * scan.BATCH_BYTES
    doc, _ = build_set(values=[("seeds.txt:1", SEED), ("times.txt:1", DECIMAL),
                               ("labels.txt:1", TEXT)])
    (tmp_path / "withheld.json").write_text(dumps(doc))
    outs = []
    for jobs in ("1", "2"):
        p = run_process("scan", "--withheld", "withheld.json", "--format", "json", "--jobs", jobs,
                 "--max-file-bytes", "50000", "tree", cwd=tmp_path)
        leak.text(p.stdout, "stdout")
        leak.text(p.stderr, "stderr")
        assert p.returncode == 1, p.stderr
        outs.append(p.stdout)
    assert outs[0] == outs[1]
    found = json.loads(outs[0])
    assert len({f["path"] for f in found["findings"]}) > 60


@pytest.mark.parametrize(("value", "says"), [("-2", "--jobs -2: give 1 or more"),
                                              ("two", "invalid int value: 'two'")])
def test_a_bad_jobs_value_is_exit_2_naming_it(tmp_path, value, says) -> None:
    doc, _ = build_set(values=[("seeds.txt:1", SEED)])
    (tmp_path / "withheld.json").write_text(dumps(doc))
    (tmp_path / "a.txt").write_text("fine\n")
    p = run_process("scan", "--withheld", "withheld.json", "--jobs", value, "a.txt", cwd=tmp_path)
    assert p.returncode == 2 and says in p.stderr, p.stderr
    assert p.stdout == ""
