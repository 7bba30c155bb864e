"""The ship scan's front end: one session, one cache protocol, one mode decision, one redactor."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit.scan import SEED, make_set, zip_bytes

from plimsoll_ci.errors import BadInput, ConfigError
from plimsoll_ci.shipscan.results import Verdict, combine, decide_mode, shown_path
from plimsoll_ci.shipscan.scan import (
    Item,
    Limits,
    Redactor,
    Scanner,
    ShipScan,
    make_limits,
    scan_items,
)

S = SEED.encode()


class KeepAll:
    """A `VerdictCache` that keeps every verdict (as history's blob cache does)."""

    def __init__(self) -> None:
        self.store: dict[str, Verdict] = {}
        self.gets = self.hits = 0

    def get(self, key: str) -> Verdict | None:
        self.gets += 1
        v = self.store.get(key)
        self.hits += v is not None
        return v

    def put(self, key: str, verdict: Verdict) -> None:
        self.store[key] = verdict


def _tree() -> list[Item]:
    return [
        Item(f"runs/{SEED}/log.txt", b"t=1\n"),
        Item("viewer/replay.html", b'<a href="seed-' + S + b'.json">x</a>\n'),
        Item("viewer/copy.html", b'<a href="seed-' + S + b'.json">x</a>\n'),
        Item("data.zip", zip_bytes([(f"seed-{SEED}.json", b"{}"), ("a.txt", b"fine")])),
        Item("b64.txt", b"x = " + base64.b64encode(b"seed " + S) + b"\n"),
        Item("clean.txt", b"nothing here\n"),
    ]


def test_a_cache_that_keeps_every_verdict_reports_what_a_fresh_scan_reports() -> None:
    wset = make_set()
    fresh = ShipScan(wset).scan(_tree())
    cache = KeepAll()
    first = ShipScan(wset, cache=cache).scan(_tree())
    again = ShipScan(wset, cache=cache).scan(_tree())
    assert cache.hits == 2 * len(_tree())  # every name and every content, from the cache
    assert first == fresh and again == fresh
    assert SEED not in repr(again)
    assert {f.path for f in again.findings} >= {"runs/[withheld]/", "viewer/replay.html",
                                                "data.zip"}


def test_the_same_content_under_two_labels_is_scanned_once_and_shown_under_both() -> None:
    cache = KeepAll()
    result = ShipScan(make_set(), cache=cache).scan(_tree())
    same = [k for k in cache.store if k.startswith("blob:")]
    assert len(same) == len(_tree()) - 1  # replay.html and copy.html share one content verdict
    paths = [f.path for f in result.findings if f.where == "content"]
    assert "viewer/replay.html" in paths and "viewer/copy.html" in paths


def test_bytes_scanned_count_each_shown_file_once_up_to_the_file_bound() -> None:
    items = [Item("a.txt", b"x" * 100), Item("a.txt", b"y" * 7), Item("b.txt", b"z" * 30)]
    result = scan_items(items, make_set(), Limits(max_file_bytes=50))
    assert (result.files, result.bytes) == (2, 50 + 30)
    assert result.notes == ["a.txt: 100 bytes, over the 50-byte file bound: scanned up to the "
                            "bound"]


def test_items_read_by_blob_id_count_and_find_like_items_with_data() -> None:
    from plimsoll_ci.git import blob_id

    datas = {blob_id(i.data): i.data for i in _tree()}
    asked: list[list[str]] = []

    def read(oids: list[str]) -> dict[str, bytes]:
        asked.append(list(oids))
        return {o: datas[o] for o in oids}

    lazy = [Item(i.label, None, blob=blob_id(i.data)) for i in _tree()]
    assert ShipScan(make_set(), read=read).scan(lazy) == ShipScan(make_set()).scan(_tree())
    assert len(asked) == 1  # one read for the batch


def test_a_failed_blob_read_is_raised_by_the_scan_and_leaves_no_thread_behind() -> None:
    import threading

    def read(oids: list[str]) -> dict[str, bytes]:
        raise BadInput("git object is missing; the repository is incomplete")

    lazy = [Item(i.label, None, blob="0" * 40 if n else "1" * 40) for n, i in enumerate(_tree())]
    before = set(threading.enumerate())  # (a test worker may hold threads of its own)
    with pytest.raises(BadInput, match="is missing"):
        ShipScan(make_set(), read=read).scan(lazy)
    # the reading thread was joined; workers can fork
    assert set(threading.enumerate()) <= before


def test_a_bound_hit_in_a_joined_batch_counts_per_file_as_for_a_file_alone() -> None:
    # Each file has two encoded regions: under a bound of three per file, over it per batch.
    enc = base64.b64encode
    a = b"x = " + enc(b"first region here") + b"\ny = " + enc(b"second region here") + b"\n"
    b = b"x = " + enc(b"third region here") + b"\ny = " + enc(b"seed " + S) + b"\n"
    result = scan_items([("a.txt", a), ("b.txt", b)], make_set(), Limits(max_regions=3))
    assert [(f.path, f.chain) for f in result.findings] == [("b.txt", "base64")]
    assert result.notes == []
    alone = scan_items([("b.txt", b)], make_set(), Limits(max_regions=1))
    assert alone.notes == ["b.txt: more than 1 encoded regions: the rest not decoded"]


def test_a_batch_over_the_region_bound_in_total_but_not_per_file_is_decoded_in_one_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Source code has many base64-looking runs (CamelCase names): a batch of files that each
    # stay under the bound is decoded joined, not file by file again (it was, and ran at half
    # the speed), and finds what each file alone finds.
    from plimsoll_ci.engine import contents

    calls: list[int] = []

    def counted(real):  # noqa: ANN001, ANN202
        def call(buf, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            calls.append(len(buf))
            return real(buf, *args, **kwargs)
        return call

    for name in ("text_regions", "regions_in_bulk"):  # (a file's alone, a batch's joined)
        monkeypatch.setattr(contents, name, counted(getattr(contents, name)))
    enc = base64.b64encode
    files = [(f"f{i}.py", b"".join(b"x = '" + enc(b"region %d of file %d" % (k, i)) + b"'\n"
                                    for k in range(3))) for i in range(6)]
    files.append(("leak.py", b"y = '" + enc(b"seed " + S) + b"'\n"))
    result = scan_items(files, make_set(), Limits(max_regions=3))
    assert [(f.path, f.chain) for f in result.findings] == [("leak.py", "base64")]
    assert result.notes == []
    assert len(calls) == 1, calls  # one pass over the joined batch


@pytest.mark.parametrize("asked, override, mode", [
    ((None, None), None, "refuse"), (("refuse", "refuse"), None, "refuse"),
    (("warn", "refuse"), None, "warn"), (("refuse", "warn"), None, "warn"),
    (("warn", "warn"), "refuse", "refuse"), (("refuse",), "warn", "warn"),
])
def test_the_mode_is_decided_in_one_place(asked, override, mode) -> None:
    assert decide_mode(*asked, override=override) == mode


def test_a_result_refuses_only_with_findings_in_refuse_mode() -> None:
    wset = make_set()
    leak = [("a.txt", b"seed " + S)]
    assert scan_items(leak, wset).refused
    assert not scan_items(leak, wset, mode="warn").refused
    assert not scan_items([("a.txt", b"fine")], wset).refused
    with pytest.raises(BadInput, match="mode 'maybe'"):
        decide_mode("maybe")


def test_combined_results_keep_each_finding_once_and_add_up_what_was_scanned() -> None:
    wset = make_set()
    one = scan_items([("a.txt", b"seed " + S)], wset)
    two = scan_items([("a.txt", b"seed " + S), ("b.txt", b"x")], wset, mode="warn")
    both = combine([("commit aaa", one), ("commit bbb", two)])
    assert [f.detail for f in both.findings] == ["first seen in commit aaa"]
    assert (both.files, both.bytes, both.mode) == (3, one.bytes + two.bytes, "warn")


def test_limits_are_built_in_one_place_and_refuse_unknown_or_bad_bounds() -> None:
    assert make_limits({"max_members": 10}, "plimsoll.yaml",
                       {"max_members": 5, "max_line": None}) == Limits(max_members=5)
    with pytest.raises(ConfigError, match="plimsoll.yaml: limits: unknown bound 'max_bogus'"):
        make_limits({"max_bogus": 1}, "plimsoll.yaml")
    with pytest.raises(BadInput, match="--max-file-bytes must be positive, not 0"):
        make_limits(overrides={"max_file_bytes": 0})


@pytest.mark.parametrize("given, shown", [
    ("./a/b.txt", "a/b.txt"), ("a//b/./c", "a/b/c"), ("a/b/", "a/b/"), ("/abs/./x", "/abs/x"),
    ("plain/path.txt", "plain/path.txt"), ("drone:viewer/x.html", "drone:viewer/x.html"),
])
def test_paths_are_shown_one_way(given: str, shown: str) -> None:
    assert shown_path(given) == shown


def test_the_redactor_hides_a_value_in_any_printed_part_even_one_it_was_not_told_of() -> None:
    redactor = Redactor(Scanner(make_set()))
    note = f"big.zip: zip member runs/{SEED}.json: over the bound"
    assert SEED not in redactor.text(note)
    assert redactor.text(note).startswith("big.zip: zip member runs/[withheld]")
    encoded = base64.b64encode(S).decode()
    assert redactor.text(f"x/{encoded}/y.txt") == "x/[withheld]/y.txt"
    assert redactor.text("viewer/replay.html: fine") == "viewer/replay.html: fine"


def test_a_warm_session_never_builds_the_engine() -> None:
    cache = KeepAll()
    ShipScan(make_set(), cache=cache).scan([Item("clean.txt", b"nothing\n")])
    warm = ShipScan(make_set(), cache=cache)
    result = warm.scan([Item("clean.txt", b"nothing\n")])
    assert warm.verdicts._scanner is None and (result.files, result.bytes) == (1, 8)


def test_a_member_name_seen_in_an_earlier_batch_is_redacted_alike_from_the_cache() -> None:
    member = zip_bytes([(f"seed-{SEED}.json", b"{}")])
    big = b"x" * (5 * 1024 * 1024)  # over one batch: the two archives are scanned apart
    items = [Item("one.zip", member), Item("big.txt", big), Item("two.zip", member + b"\0")]
    cache = KeepAll()
    ShipScan(make_set(), cache=cache).scan(items)
    again = ShipScan(make_set(), cache=cache).scan(items[2:])  # two.zip alone, from the cache
    assert again == ShipScan(make_set()).scan(items[2:])
    assert {f.chain for f in again.findings if f.where == "name"} == {
        "zip member seed-[withheld].json (file name)"}


BLAS_PROBE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from kit.scan import SEED, make_set
from plimsoll_ci.match import classes
from plimsoll_ci.shipscan.scan import Item, ShipScan
if sys.argv[2] == "portable":  # as installed without a C compiler: the pure-Python passes
    classes.native = None
data = ("gate drone thrust 1234567\\n" * 40_000 + SEED + "\\n").encode()  # 1 MB: the large path
result = ShipScan(make_set(), jobs=1).scan([Item("big.txt", data, "big.txt", None)])
print(json.dumps([len(result.findings), "numpy" in sys.modules,
                  len(os.listdir("/proc/self/task")), "OPENBLAS_NUM_THREADS" in os.environ]))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_a_large_scan_loads_neither_numpy_nor_openblas_threads_with_or_without_the_compiled_part(
        ) -> None:
    # OpenBLAS starts a thread per core at numpy's import, spinning (about 100 ms of CPU on a
    # cold hook run); the engine's passes are compiled or pure Python and import no numpy.
    from plimsoll_ci.match import classes

    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    builds = [("portable", False)] + ([("built", False)] if classes.native is not None else [])
    for build, numpy in builds:
        out = subprocess.run([sys.executable, "-c", BLAS_PROBE, str(Path(__file__).parents[1]), build],
                             capture_output=True, text=True, env=env, check=True).stdout
        assert json.loads(out) == [1, numpy, 1, False], build
