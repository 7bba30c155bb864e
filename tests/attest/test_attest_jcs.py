"""Signed digests are RFC 8785 (JCS): any JCS library recomputes them, not only ours.

The result digest a record signs, the statement it signs and every bundle line are the JCS bytes
of their JSON: checked with the `rfc8785` package directly and with a Node script over npm's
`canonicalize` (the RFC author's implementation), which `.ci/run` installs into `.ci/cache`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from kit.attest_forge import fixed_signer

from plimsoll_ci.attest import bundle, canonical, record

SIGNER = fixed_signer(7)
REPO = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO / ".ci" / "cache" / "node_modules"

# Results that the v1 form wrote differently from JCS: a float with a zero fraction (the issue's
# `30.0`), exponents, a negative zero, non-ASCII text, control characters, a key order that differs
# between UTF-16 code units and code points.
RESULTS = [
    {"landed": 1, "total": 1, "flights": [{"time": 30.0, "cpu_s": 0.000125, "gates": 4}]},
    {"big": 1e21, "small": 1e-7, "zero": -0.0, "third": 333333333.33333329, "n": 9007199254740991},
    {"note": "caf\u00e9 \u20ac \U0001f600 \u2028", "ctl": "\x00\x0f\x7f\n\t", "q": "\"\\/"},
    {"\u20ac": 1, "\U0001f600": 2, "\ufb33": 3, "a": 4},
]


def _predicate(result: dict) -> dict:
    return record.make_predicate(
        result_doc=result, controller_files={"controller.py": "ab" * 32}, course="hard",
        provider="gvisor", tier="kernel", evidence={"runtime": "runsc", "cpu": 30.0},
        cpu_budget={"per_tick_s": 0.05, "per_flight_s": 30.0}, started="2026-01-31T12:00:00Z",
        finished="2026-01-31T12:00:05Z", tool_version="0.1.0")


@pytest.fixture
def written(tmp_path: Path) -> Path:
    path = tmp_path / "runs.intoto.jsonl"
    bundle.append_runs(path, [(r, _predicate(r)) for r in RESULTS], SIGNER)
    return path


def test_the_signed_result_digest_is_the_sha256_of_rfc8785_bytes():
    result = RESULTS[0]
    assert record.result_digest(result) == hashlib.sha256(rfc8785.dumps(result)).hexdigest()
    # the v1 form wrote `30.0` and so signed another digest: the defect this format fixes
    assert canonical.dumps_v1(result) != rfc8785.dumps(result)


def test_every_line_statement_and_result_is_rfc8785_per_the_rfc8785_package(written: Path):
    lines = written.read_bytes().splitlines()
    assert len(lines) == len(RESULTS) + 1
    for raw in lines:
        doc = json.loads(raw)
        assert rfc8785.dumps(doc) == raw
        payload = canonical.b64decode(doc["envelope"]["payload"])
        statement = json.loads(payload)
        assert rfc8785.dumps(statement) == payload
        if doc["kind"] == "record":
            digest = hashlib.sha256(rfc8785.dumps(doc["result"])).hexdigest()
            assert statement["subject"][0]["digest"]["sha256"] == digest
            assert statement["predicateType"] == record.PREDICATE_TYPE


def test_a_node_jcs_implementation_recomputes_every_digest(written: Path):
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "canonicalize").is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail("node and npm's canonicalize are required in CI (.ci/run installs them "
                        "into .ci/cache)", pytrace=False)
        pytest.skip("node or npm's canonicalize missing (.ci/run installs them)")
    proc = subprocess.run([node, str(Path(__file__).parent / "jcs" / "recompute.js"), str(written)],
                          capture_output=True, text=True, env={**os.environ,
                                                               "NODE_PATH": str(NODE_MODULES)})
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [r["kind"] for r in rows] == ["record"] * len(RESULTS) + ["checkpoint"]
    for r in rows:
        assert r["line_is_jcs"] and r["payload_is_jcs"], r
        if r["kind"] == "record":
            assert r["result_sha256"] == r["subject"] == r["predicate_result"]


def test_a_line_rewritten_in_the_v1_form_is_refused(written: Path):
    lines = written.read_bytes().splitlines(keepends=True)
    doc = json.loads(lines[2])  # the record with non-ASCII text: v1 escapes it
    lines[2] = canonical.dumps_v1(doc) + b"\n"
    assert lines[2] != canonical.dumps(doc) + b"\n"
    report = bundle.verify_bytes(b"".join(lines), SIGNER.public)
    reasons = [str(p) for p in report.problems]
    assert "bundle line 3: line not in the canonical form its type " \
           f"{record.PREDICATE_TYPE} is written in" in reasons


@pytest.mark.parametrize("text", [
    b'{"a":1,"a":2}',             # a duplicated key
    b'{"a":1.50}',                # a number not in its shortest form
    b'{"a":NaN}',                 # not JSON
    b'{"b":1,"a":2}',             # keys out of order
    b'{"a":9007199254740993}',    # an integer JCS cannot carry
    b"[" * 100_000 + b"]" * 100_000,  # nesting that would exhaust the stack
])
def test_the_reader_refuses_what_no_writer_would_write(text: bytes):
    with pytest.raises(canonical.NotCanonical):
        canonical.loads(text)  # the form every new record is written in


def test_verify_reads_a_gzip_bundle_and_refuses_a_broken_one(written: Path, tmp_path: Path):
    gz = tmp_path / "runs.intoto.jsonl.gz"
    gz.write_bytes(gzip.compress(written.read_bytes()))
    report = bundle.verify_bundle(gz, SIGNER.public, expect_count=len(RESULTS))
    assert report.ok, report.problems
    cut = tmp_path / "cut.intoto.jsonl.gz"
    cut.write_bytes(gz.read_bytes()[:-20])
    from plimsoll_ci.errors import BadInput

    with pytest.raises(BadInput, match="gzip file that does not decompress"):
        bundle.verify_bundle(cut, SIGNER.public)


# --- the writer's fast road (the standard library's C encoder) gives RFC 8785's bytes ---------

_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e-4, 9.999e-5, 1e16, 9999999999999998.0, 1e21, 30.0, 0.1, -2.5]),
    st.integers(-10**6, 10**6).map(float))
_NUMBERS = st.one_of(st.integers(-(2**53 - 1), 2**53 - 1), _FLOATS)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_KEYS = st.one_of(st.text(st.characters(max_codepoint=127), max_size=6), _TEXT)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=24)


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_the_writer_gives_the_rfc8785_packages_bytes_for_any_json(obj):
    assert canonical.dumps(obj) == rfc8785.dumps(obj)


@pytest.mark.parametrize("bad", [
    {"x": float("nan")}, [float("inf")], {"n": 2**53}, [-(2**53)], {1: "int key"}, ["\ud800"],
    {"k": b"bytes"}, {"s": {1, 2}},
], ids=["nan", "infinity", "2^53", "-2^53", "int key", "lone surrogate", "bytes", "set"])
def test_the_writer_refuses_what_rfc8785_cannot_carry(bad):
    with pytest.raises(ValueError, match="RFC 8785"):
        canonical.dumps(bad)


def _nested(levels: int) -> object:
    obj: object = []
    for _ in range(levels - 1):
        obj = [obj]
    return obj


@pytest.mark.parametrize("nested", [{"a": _nested(canonical.MAX_DEPTH)}, _nested(5000)],
                         ids=["one past the bound", "5000 deep"])
def test_the_writer_refuses_nesting_past_the_bound_on_either_road(nested):
    with pytest.raises(ValueError, match="nested deeper"):
        canonical.dumps(nested)
    with pytest.raises(ValueError, match="nested deeper"):
        canonical.dumps({"\u20ac": nested})  # a non-ASCII key takes the package's road


def _text_depth_bytewise(data: bytes) -> int:
    depth = deepest = 0
    in_string = escaped = False
    for b in data:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif b in b"]}":
            depth -= 1
    return deepest


@settings(max_examples=300, deadline=None)
@given(st.one_of(_JSON.map(lambda o: json.dumps(o).encode()),
                 st.binary(max_size=40).map(lambda b: b.replace(b"\x00", b'"')),
                 st.text('[]{}"\\ab', max_size=40).map(str.encode)))
def test_the_readers_depth_count_skips_brackets_inside_strings_closed_or_not(data):
    cap = canonical.MAX_DEPTH + 1  # both stop counting past the bound
    assert min(canonical._text_depth(data), cap) == min(_text_depth_bytewise(data), cap)
