"""The tamper matrix: every edit of a small signed bundle is refused, at the right line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kit import attest_demo as demo
from kit.attest_forge import (
    fixed_signer,
    forge_record_line,
    lines_of,
    problem_lines,
    resign_line,
    seal,
    small_bundle,
)

from plimsoll_ci.attest import bundle, canonical, record
from plimsoll_ci.grading import fresh

SIGNER = fixed_signer(1)
FOREIGN = fixed_signer(2)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> bytes:
    return small_bundle(tmp_path_factory.mktemp("tamper"), SIGNER, count=2, flights=1)


def verify(data: bytes, expect_count: int | None = None) -> bundle.Report:
    return bundle.verify_bytes(data, SIGNER.public, expect_count)


def test_the_untouched_small_bundle_verifies(small):
    report = verify(small, expect_count=2)
    assert report.ok, report.problems
    assert report.count == 2 and len(report.records) == 2


def test_verify_refuses_every_single_byte_change_at_its_line(small):
    missed, misplaced = [], []
    for pos in range(len(small)):
        # Flip the low bit: a digit, letter, quote, brace or newline becomes a near neighbour.
        # (Other byte values at random places: the hypothesis test below.)
        data = bytearray(small)
        data[pos] ^= 0x01
        report = verify(bytes(data))
        line = small[:pos].count(b"\n") + 1
        if report.ok:
            missed.append(pos)
        elif min(problem_lines(report)) != line:
            misplaced.append((pos, line, report.problems[:2]))
    assert not missed, f"{len(missed)} single-byte changes verified, first: {missed[:5]}"
    assert not misplaced, misplaced[:5]


@settings(max_examples=300, deadline=None)
@given(pos=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_verify_refuses_any_byte_value_at_any_place(small, pos, value):
    pos %= len(small)
    if small[pos] == value:
        return
    data = bytearray(small)
    data[pos] = value
    report = verify(bytes(data))
    assert not report.ok
    assert min(problem_lines(report)) == small[:pos].count(b"\n") + 1


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=400))
def test_verify_never_crashes_on_arbitrary_bytes(data):
    report = verify(data)
    assert not report.ok
    assert all(p.line >= 1 for p in report.problems)


def test_verify_refuses_each_deleted_line_at_its_place(small):
    lines = lines_of(small)
    for k in range(len(lines)):
        data = b"".join(lines[:k] + lines[k + 1:])
        report = verify(data)
        assert not report.ok, f"deleting line {k + 1} went unnoticed"
        assert min(problem_lines(report)) == min(k + 1, len(lines) - 1)


def test_verify_refuses_a_reordered_bundle(small):
    lines = lines_of(small)
    for a in range(len(lines)):
        for b in range(a + 1, len(lines)):
            swapped = list(lines)
            swapped[a], swapped[b] = swapped[b], swapped[a]
            report = verify(b"".join(swapped))
            assert not report.ok, f"swapping lines {a + 1} and {b + 1} went unnoticed"
            assert min(problem_lines(report)) == a + 1
            assert b + 1 in problem_lines(report)


def test_verify_refuses_a_duplicated_line(small):
    lines = lines_of(small)
    for k in range(len(lines)):
        data = b"".join(lines[: k + 1] + [lines[k]] + lines[k + 1:])
        report = verify(data)
        assert not report.ok, f"duplicating line {k + 1} went unnoticed"
        assert min(problem_lines(report)) == k + 2


def test_verify_refuses_a_cut_tail_at_any_length(small):
    for keep in range(len(small)):
        kept = small[:keep]
        report = verify(kept)
        assert not report.ok, f"a bundle cut to {keep} bytes verified"
        expected = kept[:-1].count(b"\n") + 1 if keep else 1
        assert min(problem_lines(report)) == expected, (keep, report.problems[:2])


def test_verify_refuses_lines_appended_after_the_checkpoint(small):
    lines = lines_of(small)
    report = verify(small + lines[0])
    assert not report.ok
    assert set(problem_lines(report)) == {len(lines) + 1}


def test_verify_refuses_a_line_resigned_under_a_foreign_key(small):
    lines = lines_of(small)
    for k in range(len(lines)):
        forged = list(lines)
        forged[k] = resign_line(lines[k], FOREIGN)
        report = verify(b"".join(forged))
        assert not report.ok
        assert min(problem_lines(report)) == k + 1
        assert "not the given key" in report.problems[0].reason


def test_verify_refuses_a_foreign_signature_claiming_our_key_id(small):
    lines = lines_of(small)
    for k in range(len(lines)):
        forged = list(lines)
        forged[k] = resign_line(lines[k], FOREIGN, keyid=SIGNER.keyid)
        report = verify(b"".join(forged))
        assert min(problem_lines(report)) == k + 1
        assert "signature does not verify" in report.problems[0].reason


def test_verify_refuses_a_whole_bundle_signed_by_another_key(tmp_path):
    data = small_bundle(tmp_path, FOREIGN, count=2)
    report = verify(data)
    assert problem_lines(report) == [1, 2, 3]


def test_verify_refuses_a_resealed_bundle_with_an_edited_result(small):
    # Someone who edits a result and re-links every line still cannot re-sign the checkpoint.
    lines = lines_of(small)
    doc = canonical.loads(lines[0].rstrip(b"\n"))
    doc["result"]["landed"] += 1
    first = canonical.dumps(doc) + b"\n"
    second = canonical.loads(lines[1].rstrip(b"\n"))
    second["previous"] = bundle.line_digest(first.rstrip(b"\n"))
    relinked = [first, canonical.dumps(second) + b"\n", lines[2]]
    report = verify(b"".join(relinked))
    assert min(problem_lines(report)) == 1
    assert "stored result does not match" in report.problems[0].reason
    assert 3 in problem_lines(report)  # the checkpoint's head no longer matches


def test_verify_refuses_a_reveal_that_does_not_match_its_commitment(tmp_path):
    result, predicate = demo.demo_run(0, flights=2)
    other = fresh.draw(2)
    predicate["freshSetReveal"] = fresh.reveal(other)  # signed by the real key, but wrong
    line = forge_record_line(1, bundle.GENESIS, result, predicate, SIGNER)
    report = verify(seal([line], SIGNER))
    assert [str(p) for p in report.problems] == [
        "bundle line 1: fresh set reveal does not match its commitment"
    ]


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda p: p.__setitem__("freshSetReveal", None), "committed to but never revealed"),
        (lambda p: p["inputs"].__setitem__("freshSet", None), "revealed but never committed"),
        (lambda p: p["freshSetReveal"]["seeds"].reverse(), "does not match its commitment"),
        (lambda p: p["sandbox"].__setitem__("tier", "hardware"), "tier is not one of"),
    ],
)
def test_verify_refuses_a_signed_record_with_a_bad_predicate(edit, reason):
    result, predicate = demo.demo_run(1, flights=3)
    edit(predicate)
    line = forge_record_line(1, bundle.GENESIS, result, predicate, SIGNER)
    report = verify(seal([line], SIGNER))
    assert problem_lines(report) == [1]
    assert reason in report.problems[0].reason


def test_verify_reports_every_problem_not_only_the_first(tmp_path):
    data = small_bundle(tmp_path, SIGNER, count=4)
    lines = lines_of(data)
    lines[1] = resign_line(lines[1], FOREIGN)
    del lines[3]
    report = verify(b"".join(lines))
    assert {2, 4} <= set(problem_lines(report))
    assert all(str(p).startswith(f"bundle line {p.line}: ") for p in report.problems)


def test_expect_count_refuses_a_bundle_rolled_back_to_an_earlier_seal(tmp_path):
    path = tmp_path / "b.intoto.jsonl"
    demo.write_demo_bundle(path, SIGNER, 2)
    earlier = path.read_bytes()
    demo.write_demo_bundle(path, SIGNER, 1)
    assert verify(earlier).ok  # an earlier seal is a valid bundle on its own...
    report = verify(earlier, expect_count=3)  # ...which only the expected count catches
    assert [str(p) for p in report.problems] == ["bundle line 3: expected 3 records, the bundle has 2"]
    assert verify(path.read_bytes(), expect_count=3).ok


def test_non_canonical_json_of_the_same_value_is_refused(small):
    lines = lines_of(small)
    doc = canonical.loads(lines[0].rstrip(b"\n"))
    import json

    spaced = json.dumps(doc, sort_keys=True).encode() + b"\n"  # same value, with spaces
    report = verify(spaced + b"".join(lines[1:]))
    assert problem_lines(report)[0] == 1
    assert "canonical" in report.problems[0].reason
    assert record.PREDICATE_TYPE.startswith("https://plimsoll-ci.dev/")


def test_parallel_verification_reports_exactly_what_serial_verification_does(small):
    lines = lines_of(small)
    variants = [small, b"".join(lines[1:]), b"".join([lines[1], lines[0], lines[2]]),
                b"".join([resign_line(lines[0], FOREIGN), *lines[1:]]), small[:-7]]
    for data in variants:
        serial = bundle.verify_bytes(data, SIGNER.public, workers=1)
        parallel = bundle.verify_bytes(data, SIGNER.public, workers=2)
        assert parallel == serial


def test_verify_refuses_deeply_nested_json_without_crashing():
    report = verify(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    assert [p.line for p in report.problems][:1] == [1]


def test_verify_refuses_a_checkpoint_that_seals_nothing():
    lone = bundle._checkpoint_line(0, bundle.GENESIS, SIGNER) + b"\n"
    report = verify(lone)
    assert [str(p) for p in report.problems] == [
        "bundle line 1: checkpoint: seals no records (a bundle holds at least one)"
    ]
