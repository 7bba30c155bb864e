"""`--bisect`: the first leaking commit in O(log n) scans, with its assumption stated."""

from __future__ import annotations

import json
import math
from pathlib import Path

from kit.history import LEAK, GitRepo, checked_cli, viewer


def _linear(repo: GitRepo, n: int, leak_at: int) -> list[str]:
    commits = []
    for i in range(n):
        if i == leak_at:
            repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
        repo.write("tasks/drone/log.txt", f"step {i}\n")
        commits.append(repo.commit(f"step {i}", i))
    return commits


def test_bisect_finds_the_first_leak_in_logarithmic_scans(globrepo: GitRepo,
                                                          wset_path: Path) -> None:
    commits = _linear(globrepo, 40, 23)
    proc = checked_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2", "--format",
                   "json", "--no-progress", cwd=globrepo.path)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["first"]["commit"] == commits[23]
    assert doc["first"]["paths"] == ["viewer/replay.html"]
    assert doc["commits"] == 40
    assert doc["scans"] <= math.ceil(math.log2(40)) + 1
    assert "assumes the entry kept shipping once introduced" in doc["assumption"]


def test_bisect_text_states_its_assumption(globrepo: GitRepo, wset_path: Path) -> None:
    commits = _linear(globrepo, 9, 0)
    proc = checked_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2", "--no-progress",
                   cwd=globrepo.path)
    assert proc.returncode == 1
    assert commits[0][:12] in proc.stdout
    assert "assumes the entry kept shipping once introduced" in proc.stdout


def test_bisect_with_a_clean_tip_says_so_and_exits_0(globrepo: GitRepo, wset_path: Path) -> None:
    _linear(globrepo, 5, 99)
    proc = checked_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2", "--no-progress",
                   cwd=globrepo.path)
    assert proc.returncode == 0
    assert "does not ship at the tip" in proc.stdout


def test_bisect_finds_where_a_fixed_leak_began_and_its_fix(globrepo: GitRepo,
                                                           wset_path: Path) -> None:
    """when-it-fires.md sends a user who rotated a fixed leak to --bisect: the tip no longer
    ships it, and bisect still names the first commit that did, and the fix."""
    commits = []
    for i in range(30):
        if i == 10:
            globrepo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
        if i == 20:
            globrepo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
        globrepo.write("tasks/drone/log.txt", f"step {i}\n")
        commits.append(globrepo.commit(f"step {i}", i))
    proc = checked_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2", "--format",
                   "json", "--no-progress", cwd=globrepo.path)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["first"]["commit"] == commits[10]
    assert doc["first"]["paths"] == ["viewer/replay.html"]
    assert doc["fixed"]["commit"] == commits[20]
    assert any("does not ship at the tip" in n for n in doc["notes"])
    text = checked_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2",
                   "--no-progress", cwd=globrepo.path)
    assert text.returncode == 1
    assert f"first ships at {commits[10][:12]}" in text.stdout
    assert f"fixed at {commits[20][:12]}" in text.stdout
    assert LEAK not in text.stdout + proc.stdout
