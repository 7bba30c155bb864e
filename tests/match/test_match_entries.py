"""File entries (SHA-256), source entries (fingerprints), shipped withheld sets, keyed sets."""

from __future__ import annotations

import json
import re

import pytest
from kit.scan import SEED, VALUES, make_set, scan_checked, zip_bytes

from plimsoll_ci.errors import WithheldSetError
from plimsoll_ci.withheld import SEALED_FORMAT, build_set, dumps, load, parse

SECRET_FILE = b"flight,seed,score\n1,3107713414,0.93\n2,884201117,0.41\n"

GENERATOR = b'''
import math
import random


def make_course(seed, n_gates=12, radius=40.0):
    """Gates on a wobbly ring; the wobble is what a controller must learn."""
    rng = random.Random(seed)
    gates = []
    for i in range(n_gates):
        angle = 2 * math.pi * i / n_gates
        wobble = rng.uniform(-0.25, 0.25) * radius
        height = 2.0 + rng.random() * 6.0
        x = (radius + wobble) * math.cos(angle)
        y = (radius + wobble) * math.sin(angle)
        gates.append((x, y, height))
    return gates


def wind_profile(seed, steps, gust=3.5):
    rng = random.Random(seed ^ 0x5EED)
    wind = [0.0, 0.0]
    out = []
    for t in range(steps):
        wind[0] = 0.9 * wind[0] + rng.gauss(0, gust) * 0.1
        wind[1] = 0.9 * wind[1] + rng.gauss(0, gust) * 0.1
        if t % 50 == 0:
            wind[0] += rng.choice([-1, 1]) * gust
        out.append(tuple(wind))
    return out


def score(path, gates, limit=0.05):
    passed = 0
    for gx, gy, gz in gates:
        best = min(math.dist((gx, gy, gz), p) for p in path)
        if best < 1.5:
            passed += 1
    return passed / len(gates)
'''

# The same code renamed and reformatted: other names, two-space indents, no comments or
# docstrings, other blank lines. A copy all the same.
COPY = b'''
import math, random
def build(s, count=12, r=40.0):
  g = random.Random(s)
  out = []
  for k in range(count):
    a = 2 * math.pi * k / count
    w = g.uniform(-0.25, 0.25) * r
    h = 2.0 + g.random() * 6.0
    px = (r + w) * math.cos(a)
    py = (r + w) * math.sin(a)
    out.append((px, py, h))
  return out
def winds(s, n, strength=3.5):
  g = random.Random(s ^ 0x5EED)
  cur = [0.0, 0.0]
  res = []
  for step in range(n):
    cur[0] = 0.9 * cur[0] + g.gauss(0, strength) * 0.1
    cur[1] = 0.9 * cur[1] + g.gauss(0, strength) * 0.1
    if step % 50 == 0:
      cur[0] += g.choice([-1, 1]) * strength
    res.append(tuple(cur))
  return res
def grade(trace, rings, tol=0.05):
  ok = 0
  for a, b, c in rings:
    d = min(math.dist((a, b, c), q) for q in trace)
    if d < 1.5:
      ok += 1
  return ok / len(rings)
'''

UNRELATED = b'''
import json
from pathlib import Path


def load_config(path):
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object")
    return {k.lower(): v for k, v in data.items()}


class Cache:
    def __init__(self, root):
        self.root = Path(root)
        self.hits = 0

    def get(self, key):
        p = self.root / key
        if p.exists():
            self.hits += 1
            return p.read_bytes()
        return None

    def put(self, key, data):
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / key).write_bytes(data)
'''


@pytest.fixture(scope="module")
def wset():
    return make_set(files=[("secret/scores.csv", SECRET_FILE)],
                    sources=[("sim/generator.py", GENERATOR)])


def test_a_file_entry_finds_a_shipped_file_with_the_same_bytes(wset, leak):
    result = scan_checked([("public/copy.csv", SECRET_FILE)], wset, leak)
    assert ("secret/scores.csv", "file") in [(f.entry, f.kind) for f in result.findings]


def test_a_file_entry_finds_the_file_as_a_zip_member(wset, leak):
    result = scan_checked([("pack.zip", zip_bytes([("x/y.csv", SECRET_FILE)]))], wset, leak)
    hits = [(f.entry, f.kind, f.chain) for f in result.findings]
    assert ("secret/scores.csv", "file", "zip member x/y.csv") in hits


def test_a_file_entry_does_not_find_a_file_one_byte_different(wset, leak):
    result = scan_checked([("copy.csv", SECRET_FILE + b"\n")], wset, leak)
    assert [f for f in result.findings if f.kind == "file"] == []


def test_a_renamed_and_reformatted_source_copy_is_found_with_its_overlap(wset, leak):
    result = scan_checked([("controller/course.py", COPY)], wset, leak)
    [f] = [f for f in result.findings if f.kind == "source"]
    assert f.entry == "sim/generator.py"
    share = int(re.fullmatch(r"overlap (\d+)%", f.detail).group(1))
    assert 30 <= share <= 100


def test_a_copy_of_part_of_a_source_is_found(wset, leak):
    half = GENERATOR[: GENERATOR.index(b"def score")]
    result = scan_checked([("controller/part.py", b"import os\n\n" + half)], wset, leak)
    assert "sim/generator.py" in [f.entry for f in result.findings if f.kind == "source"]


def test_an_unrelated_source_file_is_not_a_copy(wset, leak):
    result = scan_checked([("controller/config.py", UNRELATED)], wset, leak)
    assert [f for f in result.findings if f.kind == "source"] == []


def test_a_shipped_withheld_set_is_a_finding(leak):
    doc, _ = build_set([("seeds.txt:1", "101")])
    wset = parse(doc)
    result = scan_checked([("harness/withheld.json", dumps(doc).encode())], wset, leak)
    assert [(f.kind, f.entry) for f in result.findings] == [("withheld-set", "plimsoll-withheld/1")]


def test_a_shipped_sealed_set_in_a_zip_is_a_finding(leak):
    doc, _ = build_set([("seeds.txt:1", "101")], tag=SEALED_FORMAT)
    wset = make_set()
    result = scan_checked([("a.zip", zip_bytes([("sealed.json", dumps(doc).encode())]))],
                          wset, leak)
    assert [(f.kind, f.chain) for f in result.findings] == [("withheld-set", "zip member sealed.json")]


def test_a_shipped_withheld_set_with_many_entries_is_a_finding(leak):
    doc, _ = build_set([(f"seeds.txt:{i}", str(900_000_000 + i)) for i in range(1, 41)])
    result = scan_checked([("withheld.json", dumps(doc).encode())], make_set(), leak)
    assert [f.kind for f in result.findings] == ["withheld-set"]


def test_json_that_only_mentions_the_format_is_not_a_withheld_set(leak):
    data = json.dumps({"note": "plimsoll-withheld/1 files must not ship"}).encode()
    result = scan_checked([("docs.json", data)], make_set(), leak)
    assert result.findings == []


# --- keyed sets (HMAC-SHA-256) -----------------------------------------------------------------

KEY = b"k" * 32


def _keyed_file(tmp_path):
    doc, warnings = build_set(VALUES, key=KEY)
    assert warnings == []  # a keyed set is not brute-forceable: no entropy warning
    p = tmp_path / "withheld.json"
    p.write_text(dumps(doc))
    return p


def test_a_keyed_set_with_the_right_key_finds_the_value(tmp_path, leak):
    wset = load(_keyed_file(tmp_path), key=KEY)
    result = scan_checked([("a.txt", f"seed {SEED}".encode())], wset, leak)
    assert [f.entry for f in result.findings] == ["seeds.txt:2"]


def test_a_keyed_set_stores_no_plain_digest_of_the_value(tmp_path, leak):
    keyed = json.loads(_keyed_file(tmp_path).read_text())
    plain, _ = build_set(VALUES)
    assert {e["digest"] for e in keyed["entries"]}.isdisjoint(e["digest"] for e in plain["entries"])
    assert KEY.decode() not in json.dumps(keyed)


@pytest.mark.parametrize(("key", "words"), [(b"w" * 32, "wrong key"), (None, "is keyed")],
                         ids=["wrong key", "no key"])
def test_a_keyed_set_without_its_key_is_refused_naming_the_file(tmp_path, leak, key, words):
    path = _keyed_file(tmp_path)
    with pytest.raises(WithheldSetError) as e:
        load(path, key=key)
    leak.error(e.value)
    assert str(path) in str(e.value) and words in str(e.value)
    assert e.value.exit_code == 2


def test_an_unkeyed_set_of_guessable_values_warns_with_a_brute_force_time(leak):
    _, warnings = build_set([("seeds.txt:2", SEED)])
    [w] = warnings
    leak.text(w, "the warning")
    assert "seeds.txt:2" in w and "brute-forced" in w and "--key-env" in w


def test_a_set_document_holds_no_value(leak):
    doc, _ = build_set(VALUES, files=[("s.csv", SECRET_FILE)], sources=[("g.py", GENERATOR)])
    leak.text(dumps(doc), "the set file")


def test_the_build_warning_and_the_withheld_guard_share_one_entropy_estimate():
    from plimsoll_ci.shipscan.hook import _guessable_unkeyed

    values = [("a:1", "3107713414"), ("a:2", "31.5"), ("b:1", "Left Right"),
              ("b:2", "Drone Answer Key"), ("c:1", "12345678901234567890"),
              ("d:1", "skip-step 3 now"), ("d:2", "a much longer label of many words")]
    doc, warnings = build_set(values)
    warned = sorted(w.split(":")[0] + ":" + w.split(":")[1] for w in warnings)
    assert warned == sorted(_guessable_unkeyed(doc))
    assert "b:1" in warned and "a:1" in warned and "d:2" not in warned
