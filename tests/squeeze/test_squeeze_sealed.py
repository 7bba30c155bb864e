"""`squeeze run --sealed SET.commit --reveal SET.json`: a held-out set committed earlier flies in
place of a fresh set, unshown; its commitment and reveal are in every signed record and `squeeze
verify` says when it was committed; a reveal that does not match and a guessable set are refused
with nothing written, unless weak seeds are allowed (then every record and the report say so);
a plan on a held-out set keeps only its commitment, and its shards must be given the set."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from kit.cli import run_cli, run_process
from kit.scan import LeakGuard
from kit.squeeze import tiny_job

from plimsoll_ci.grading import fresh, seedsets


def committed(tmp_path: Path, seeds: list[int] | None = None,
              days_ago: int = 2) -> tuple[Path, Path, str]:
    """A held-out set (drawn, or `seeds`) committed in another process, dated `days_ago` earlier
    (only the time field: the digests are what the set gives)."""
    s, c = tmp_path / "held.json", tmp_path / "held.commit"
    if seeds is None:
        assert run_process("seeds", "draw", "4", "-o", str(s)).returncode == 0
    else:
        seedsets.write_set(s, fresh.make(seeds), bits=64)
    assert run_process("seeds", "commit", str(s), "-o", str(c)).returncode == 0
    when = (dt.datetime.now(dt.UTC) - dt.timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    c.write_text(seedsets.dumps(json.loads(c.read_text()) | {"committed": when}))
    return s, c, when


def _all_text(folder: Path) -> str:
    return "".join(p.read_text() for p in folder.iterdir()
                   if p.suffix in (".json", ".md", ".html") and p.name != "held-out.json")


def test_a_held_out_set_committed_earlier_flies_unshown_and_verify_says_when(tmp_path):
    job = tiny_job(tmp_path / "job")
    s, c, day = committed(tmp_path)
    out = tmp_path / "out"
    r = run_cli("squeeze", "run", str(job), "--out", str(out), "--provider", "process",
            "--sealed", str(c), "--reveal", str(s))
    assert r.returncode == 0, r.stderr
    seeds = json.loads(s.read_text())["seeds"]
    guard = LeakGuard(seeds)
    guard.text(r.stdout + r.stderr)
    guard.text(_all_text(out))  # only the reveal file (and the signed records) carry them
    assert json.loads((out / "held-out.json").read_text())["seeds"] == seeds
    assert not (out / "fresh.json").exists()
    result = json.loads((out / "result.json").read_text())
    assert result["held_out"]["committed"] == day and "fresh_commitment" not in result
    assert day < result["held_out"]["first_graded"]
    assert f"held-out set committed at {day}, before any grading" in (out / "report.md").read_text()
    v = run_cli("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"))
    assert v.returncode == 0, v.stdout
    assert f"committed at {day}, graded at " in v.stdout
    # every record flew sealed:1..4, no value shown, and carries commitment and reveal
    for line in (out / "bundle.intoto.jsonl").read_text().splitlines()[:-1]:
        flights = json.loads(line)["result"]["flights"]
        assert [f["id"] for f in flights[16:]] == [f"sealed:{n}" for n in range(1, 5)]
        assert all(f["seed"] is None for f in flights)


def test_a_reveal_off_by_one_seed_is_refused_and_nothing_is_written(tmp_path):
    job = tiny_job(tmp_path / "job")
    s, c, _ = committed(tmp_path)
    doc = json.loads(s.read_text())
    doc["seeds"][-1] = str(int(doc["seeds"][-1]) - 1)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(seedsets.dumps(doc))
    out = tmp_path / "out"
    r = run_cli("squeeze", "run", str(job), "--out", str(out), "--provider", "process",
            "--sealed", str(c), "--reveal", str(wrong))
    assert r.returncode == 2
    assert "does not match commitment" in r.stderr and not out.exists()
    LeakGuard(doc["seeds"]).text(r.stdout + r.stderr)


def test_a_guessable_held_out_set_is_refused_unless_weak_seeds_are_allowed(tmp_path):
    job = tiny_job(tmp_path / "job")
    weak = list(range(800_000_000, 800_000_004))  # what a hunt counting up from 0 meets
    s, c, _ = committed(tmp_path, weak)
    out = tmp_path / "out"
    base = ["squeeze", "run", str(job), "--provider", "process", "--sealed", str(c),
            "--reveal", str(s)]
    r = run_cli(*base, "--out", str(out))
    assert r.returncode == 2, r.stderr
    assert "--allow-weak-seeds" in r.stderr and not out.exists()
    LeakGuard([str(x) for x in weak]).text(r.stdout + r.stderr)
    r = run_cli(*base, "--out", str(out), "--allow-weak-seeds")
    assert r.returncode == 0, r.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["weak_seeds_allowed"] is True
    assert "weak seeds allowed" in (out / "report.md").read_text()
    v = run_cli("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"))
    assert v.returncode == 0 and "weak seeds allowed" in v.stdout, v.stdout
    for line in (out / "bundle.intoto.jsonl").read_text().splitlines()[:-1]:
        assert json.loads(line)["result"]["seed_check"]["allowWeak"] is True


def test_a_plan_on_a_held_out_set_keeps_only_its_commitment_and_shards_need_the_set(tmp_path):
    job = tiny_job(tmp_path / "job")
    s, c, day = committed(tmp_path)
    plan = tmp_path / "plan"
    r = run_cli("squeeze", "plan", str(job), "--out", str(plan), "--provider", "process",
            "--sealed", str(c), "--reveal", str(s))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in plan.iterdir()) == ["held-out.commit", "plan.json", "run.json"]
    LeakGuard(json.loads(s.read_text())["seeds"]).text(
        "".join(p.read_text() for p in plan.iterdir()))
    shard = ["squeeze", "run", str(job), "--plan", str(plan), "--provider", "process"]
    r = run_cli(*shard, "--shard", "1/2", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "give each shard --sealed" in r.stderr
    for i in (1, 2):
        r = run_cli(*shard, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}"), "--sealed",
                str(c), "--reveal", str(s))
        assert r.returncode == 0, r.stderr
    merged = tmp_path / "merged"
    # the shards ran here, each under a key made for it: this test holds their public halves
    pins = [a for i in (1, 2) for a in ("--pub", str(tmp_path / f"s{i}" / "harness.pub"))]
    m = run_cli("bundle", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), *pins, "--out",
            str(merged))
    assert m.returncode == 0, m.stderr
    assert json.loads((merged / "result.json").read_text())["held_out"]["committed"] == day
    v = run_cli("squeeze", "verify", str(merged), "--pub", str(merged / "harness.pub"))
    assert v.returncode == 0 and f"committed at {day}" in v.stdout, v.stdout


def test_smoke_seeds_are_drawn_fresh_per_session_and_a_held_out_seed_among_them_is_caught():
    import plimsoll_sim as sim
    from plimsoll_ci.squeeze import rebuild, wall

    held = fresh.draw(4)
    secrets = wall.seal(tuple(sim.PRACTICE_SEEDS), None, held_out=held)
    assert set(held.seeds) <= set(secrets.seeds())  # what smoke seeds must avoid
    one, two = rebuild._smoke(4, secrets), rebuild._smoke(4, secrets)
    assert one != two and not set(one + two) & set(secrets.seeds())
    assert wall.check_smoke(one, secrets.sealed) == []
    assert wall.check_smoke((held.seeds[2], *one[1:]), secrets.sealed) == ["sealed:3"]
