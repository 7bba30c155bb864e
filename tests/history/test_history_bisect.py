"""`--bisect`: the first leaking commit in O(log n) scans, with its assumption stated."""

from __future__ import annotations

import json
import math
from pathlib import Path

from history_repos import LEAK, GitRepo, run_cli, viewer


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
    proc = run_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2", "--format",
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
    proc = run_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2", "--no-progress",
                   cwd=globrepo.path)
    assert proc.returncode == 1
    assert commits[0][:12] in proc.stdout
    assert "assumes the entry kept shipping once introduced" in proc.stdout


def test_bisect_with_a_clean_tip_says_so_and_exits_0(globrepo: GitRepo, wset_path: Path) -> None:
    _linear(globrepo, 5, 99)
    proc = run_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2", "--no-progress",
                   cwd=globrepo.path)
    assert proc.returncode == 0
    assert "does not ship at the tip" in proc.stdout
