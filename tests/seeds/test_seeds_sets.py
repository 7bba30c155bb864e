"""`plimsoll-ci seeds draw|commit|reveal|check`: a held-out set drawn, committed before grading,
revealed after, checked by anyone; refusals that lose nothing and print no seed."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from pathlib import Path

import pytest
from kit.cli import run_cli
from kit.scan import LeakGuard

from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh, seedlint, seedsets


def drawn(tmp_path: Path, count: int = 64, name: str = "held") -> tuple[Path, Path]:
    """A set drawn and committed by the CLI: (SET.json, SET.commit)."""
    s, c = tmp_path / f"{name}.json", tmp_path / f"{name}.commit"
    r = run_cli("seeds", "draw", str(count), "-o", str(s))
    assert r.returncode == 0, r.stderr
    r = run_cli("seeds", "commit", str(s), "-o", str(c))
    assert r.returncode == 0, r.stderr
    return s, c


def seeds_of(path: Path) -> list[str]:
    return json.loads(path.read_text())["seeds"]


def test_draw_writes_64_bit_salted_seeds_mode_0600_and_prints_none_of_them(tmp_path):
    path = tmp_path / "held.json"
    r = run_cli("seeds", "draw", "64", "-o", str(path))
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert set(doc) == {"bits", "drawn", "format", "salt", "seeds"}
    assert doc["format"] == "plimsoll-seed-set/1" and doc["bits"] == 64 and len(doc["salt"]) == 64
    seeds = [int(s) for s in doc["seeds"]]
    assert len(seeds) == 64 and seeds == sorted(set(seeds))
    assert all(2**32 <= s < 2**64 for s in seeds) and max(seeds) > 2**53
    assert path.read_text() == seedsets.dumps(doc)  # one text form
    LeakGuard(doc["seeds"] + [doc["salt"]]).text(r.stdout + r.stderr)
    assert "seeds commit" in r.stderr  # what to do next


def test_draw_with_fewer_bits_stays_below_them_and_above_the_hunt_horizon(tmp_path):
    assert run_cli("seeds", "draw", "16", "-o", str(tmp_path / "s.json"), "--bits",
                   "40").returncode == 0
    assert all(2**32 <= int(s) < 2**40 for s in seeds_of(tmp_path / "s.json"))


def test_draw_refuses_to_overwrite_and_leaves_the_set_as_it_was(tmp_path):
    path = tmp_path / "held.json"
    path.write_text("my only copy\n")
    os.chmod(path, 0o600)
    r = run_cli("seeds", "draw", "64", "-o", str(path))
    assert r.returncode == 2 and "already exists; refusing to overwrite" in r.stderr
    assert path.read_text() == "my only copy\n"
    (tmp_path / "link.json").symlink_to(tmp_path / "elsewhere.json")
    assert run_cli("seeds", "draw", "4", "-o", str(tmp_path / "link.json")).returncode == 2
    assert not (tmp_path / "elsewhere.json").exists()


@pytest.mark.parametrize("args, message", [
    (["draw", "0", "-o", "{tmp}/a.json"], "between 1 and 10000"),
    (["draw", "10001", "-o", "{tmp}/a.json"], "between 1 and 10000"),
    (["draw", "4", "-o", "{tmp}/a.json", "--bits", "32"], "--bits: 32 is out of range"),
    (["draw", "4", "-o", "{tmp}/a.json", "--bits", "65"], "--bits: 65 is out of range"),
    (["draw", "4", "-o", "{tmp}/no/such/folder/a.json"], "cannot create it"),
    (["commit", "{tmp}/missing.json"], "missing.json: cannot read"),
    (["commit", "{tmp}/notjson.json"], "not JSON"),
    (["reveal", "{tmp}/held.commit"], "that is a commitment"),
    (["check", "{tmp}/held.json", "{tmp}/held.json"], "format is not plimsoll-seed-commitment/1"),
    (["commit", "{tmp}/held.json", "-o", "{tmp}/held.commit"], "already exists"),
])
def test_bad_input_exits_2_with_one_message_naming_the_file(tmp_path, args, message):
    drawn(tmp_path, 4)
    (tmp_path / "notjson.json").write_text("seeds: 1, 2\n")
    r = run_cli("seeds", *[a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and r.stderr.count("error:") == 1
    assert not (tmp_path / "a.json").exists()  # nothing half-written


def test_the_commitment_carries_digest_count_bits_time_and_nothing_that_helps_guess_a_seed(
        tmp_path):
    s, c = drawn(tmp_path)
    doc = json.loads(c.read_text())
    assert set(doc) == {"bits", "commitment", "committed", "count", "format"}
    assert (doc["count"], doc["bits"], doc["format"]) == (64, 64, "plimsoll-seed-commitment/1")
    revealed = seedsets.read_revealed(s)
    assert doc["commitment"] == fresh.commit(revealed.fresh)
    now = dt.datetime.now(dt.UTC)
    assert now - dt.timedelta(minutes=5) < dt.datetime.fromisoformat(doc["committed"]) <= now
    LeakGuard([*seeds_of(s), json.loads(s.read_text())["salt"]]).file(c)
    # the salt is what keeps a seed from being hashed out of the commitment: without it, the
    # same seeds commit to another digest
    other = fresh.make(revealed.fresh.seeds)
    assert fresh.commit(other) != doc["commitment"]


def test_commit_then_reveal_across_two_processes_and_two_days(tmp_path):
    # Day 1, one process: draw and commit; the commitment is published (here: a file).
    s, c = drawn(tmp_path)
    # Two days pass: only the commitment's time field says so (the clock is faked nowhere else,
    # and never in a digest).
    doc = json.loads(c.read_text())
    day1 = (dt.datetime.now(dt.UTC) - dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    c.write_text(seedsets.dumps(doc | {"committed": day1}))
    # Day 3, another process: reveal, and anyone checks the reveal against the commitment.
    reveal = tmp_path / "held.reveal.json"
    r = run_cli("seeds", "reveal", str(s), "-o", str(reveal))
    assert r.returncode == 0, r.stderr
    assert json.loads(reveal.read_text())["seeds"] == seeds_of(s)
    r = run_cli("seeds", "check", str(c), str(reveal))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"committed {day1}" in r.stdout and "64 seeds of 64 bits" in r.stdout
    sealed = seedsets.open_sealed(c, reveal)
    assert sealed.commitment.committed == day1 and sealed.seeds == tuple(
        int(x) for x in seeds_of(s))


def _edits():
    def seed(doc):  # one seed changed, still sorted, distinct and in range
        a, b = int(doc["seeds"][0]), int(doc["seeds"][1])
        doc["seeds"][0] = str(a + 1 if a + 1 < b else a - 1)

    def salt(doc):
        doc["salt"] = ("0" if doc["salt"][0] != "0" else "1") + doc["salt"][1:]

    def drop(doc):
        doc["seeds"].pop()

    def add(doc):
        doc["seeds"].append(str(2**64 - 2**33))

    return [("one seed", seed, "do not hash to the commitment"),
            ("the salt", salt, "do not hash to the commitment"),
            ("a seed dropped", drop, "the commitment is to 64 seeds, the reveal holds 63"),
            ("a seed added", add, "the reveal holds 65")]


@pytest.mark.parametrize("what, edit, reason", _edits(), ids=[e[0] for e in _edits()])
def test_a_reveal_that_differs_is_refused_naming_why_never_a_seed(tmp_path, what, edit, reason):
    s, c = drawn(tmp_path)
    reveal = tmp_path / "reveal.json"
    assert run_cli("seeds", "reveal", str(s), "-o", str(reveal)).returncode == 0
    doc = json.loads(reveal.read_text())
    edit(doc)
    reveal.write_text(seedsets.dumps(doc))
    r = run_cli("seeds", "check", str(c), str(reveal))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "does NOT match" in r.stdout and reason in r.stdout
    LeakGuard(seeds_of(s) + doc["seeds"]).text(r.stdout + r.stderr)
    with pytest.raises(BadInput, match="Nothing was flown") as e:
        seedsets.open_sealed(c, reveal)
    LeakGuard(seeds_of(s)).error(e.value)


def test_a_commitment_to_fewer_bits_than_the_reveal_is_refused(tmp_path):
    s, c = drawn(tmp_path, 64)
    c.write_text(seedsets.dumps(json.loads(c.read_text()) | {"bits": 63}))
    r = run_cli("seeds", "check", str(c), str(s))
    assert r.returncode == 1
    assert "the commitment says 63 bits, the reveal 64" in r.stdout
    assert "do not fit in the committed 63 bits" in r.stdout


def test_another_sets_reveal_is_refused(tmp_path):
    _s, c = drawn(tmp_path, 16, "a")
    other, _ = drawn(tmp_path, 16, "b")
    r = run_cli("seeds", "check", str(c), str(other))
    assert r.returncode == 1 and "do not hash to the commitment" in r.stdout


def test_a_commitment_dated_after_now_is_refused_before_any_grading(tmp_path):
    s, c = drawn(tmp_path, 16)
    doc = json.loads(c.read_text())
    c.write_text(seedsets.dumps(doc | {"committed": "2999-01-01T00:00:00Z"}))
    assert run_cli("seeds", "check", str(c), str(s)).returncode == 0  # the digests still match
    with pytest.raises(BadInput, match="dated 2999-01-01T00:00:00Z, after now"):
        seedsets.open_sealed(c, s)
    early = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    later = seedsets.commitment(fresh.draw(2), 64, now=early)
    assert later.committed == "2026-01-01T00:00:00Z"


def test_reveal_is_the_one_command_that_prints_the_seeds(tmp_path):
    s, c = drawn(tmp_path, 8)
    r = run_cli("seeds", "reveal", str(s))
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    assert doc == {"bits": 64, "format": "plimsoll-seed-reveal/1",
                   "salt": json.loads(s.read_text())["salt"], "seeds": seeds_of(s)}
    for quiet in (("commit", str(s)), ("check", str(c), str(s)), ("lint", str(s))):
        out = run_cli("seeds", *quiet)
        LeakGuard(seeds_of(s)).text(out.stdout + out.stderr)


def test_commit_warns_about_a_set_others_can_read_and_about_committing_a_reveal(tmp_path):
    s, _c = drawn(tmp_path, 4)
    os.chmod(s, 0o644)
    r = run_cli("seeds", "commit", str(s))
    assert r.returncode == 0 and f"chmod 600 {s}" in r.stderr
    reveal = tmp_path / "r.json"
    assert run_cli("seeds", "reveal", str(s), "-o", str(reveal)).returncode == 0
    r = run_cli("seeds", "commit", str(reveal))
    assert r.returncode == 0 and "proves nothing" in r.stderr


@pytest.mark.parametrize("field, value, message", [
    ("seeds", ["12"], "the commitment is to"),
    ("seeds", ["0012345678901"], "decimal string"),
    ("seeds", [12345678901], "decimal string"),
    ("salt", "AB" * 32, "lowercase hex"),
    ("bits", 0, "bits must be an integer"),
    ("format", "plimsoll-seed-set/2", "format is not"),
    ("format", ["plimsoll-seed-set/1"], "format is not"),  # (a list cannot key a lookup)
    ("extra", 1, "exactly the fields"),
])
def test_a_malformed_set_file_is_bad_input_naming_the_field(tmp_path, field, value, message):
    s, c = drawn(tmp_path, 4)
    doc = json.loads(s.read_text())
    doc[field] = value
    s.write_text(json.dumps(doc))
    r = run_cli("seeds", "check", str(c), str(s))
    assert r.returncode in (1, 2) and message in r.stdout + r.stderr


def test_smoke_seeds_are_drawn_fresh_for_every_session_and_avoid_the_given_sets():
    practice = fresh.draw(16).seeds
    sessions = [seedsets.draw_smoke(4, avoid=practice) for _ in range(20)]
    assert all(len(s) == 4 and not set(s) & set(practice) for s in sessions)
    assert len({x for s in sessions for x in s}) == 80  # no session repeats another's seeds
    assert all(not seedlint.seed_reasons(x) for s in sessions for x in s)
