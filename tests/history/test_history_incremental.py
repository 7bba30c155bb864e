"""The incremental replay judges every commit exactly as a ship scan of its whole tree would.

History never lists a commit's tree: it applies each commit's changes (one `git log --raw`
stream) to its first parent's ship state and propagates verdicts from parents. These tests
generate repositories with merges (an evil one too), renames into and out of shipped folders,
reverts, mode changes, submodules, names that carry a value and a `plimsoll.yaml` that changes
(and breaks) mid-history, then judge every commit from scratch (`ship.from_rev` + `ShipScan`, set
by set, by that commit's own config) and compare commit by commit.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from kit.history import SEEDS, GitRepo, make_set

from plimsoll_ci import history, withheld
from plimsoll_ci.errors import PlimsollError
from plimsoll_ci.shipscan import ship
from plimsoll_ci.shipscan.scan import ShipScan

VALUES = SEEDS[:3]
FOLDERS = ["tasks/a", "tasks/b", "viewer", "lib", "docs", "vendor/x"]
CONFIGS = [
    'ship:\n  task:\n    include: ["tasks/**"]\n',
    'ship:\n  task:\n    include: ["tasks/**", "viewer/**"]\n    exclude: ["**/*.md"]\n',
    'ship:\n  task:\n    include: ["tasks/**"]\n  view:\n    include: ["viewer/"]\n'
    '    root: viewer\n  libs:\n    include: ["lib/**", "vendor/**"]\n',
    'ship:\n  all:\n    include: ["**"]\n    exclude: ["docs/**"]\n',
    'ship:\n  task: [not a mapping\n',  # broken: commits with it ship nothing
]

# A report shows a name that carries a value redacted, a scan and a replay each in their way.
_REDACTED = re.compile(r"[^/]*\[withheld[^/]*")


class _Maker:
    """Random operations on a repository, each a commit (or a few, for a merged branch)."""

    def __init__(self, repo: GitRepo, seed: int) -> None:
        self.repo, self.rng = repo, random.Random(seed)
        self.minute = 0
        self.files: set[str] = set()

    def tracked(self) -> list[str]:
        out = self.repo.git("ls-files", "-s")
        return sorted(line.split("\t", 1)[1] for line in out.splitlines()
                      if not line.startswith("160000") and line.split("\t", 1)[1] != "plimsoll.yaml")

    def body(self) -> str:
        words = " ".join(self.rng.choice(["wind", "gate", "yaw", "seed", "track"])
                         for _ in range(6))
        if self.rng.random() < 0.3:
            words += f" example seed-{self.rng.choice(VALUES)}.json"
        return words + "\n"

    def name(self) -> str:
        folder = self.rng.choice(FOLDERS)
        if self.rng.random() < 0.08:
            folder += f"/seed-{self.rng.choice(VALUES)}"  # a folder named for a value
        stem = f"seed-{self.rng.choice(VALUES)}" if self.rng.random() < 0.05 else \
            f"f{self.rng.randrange(1000)}"
        return f"{folder}/{stem}.{self.rng.choice(['txt', 'md', 'json'])}"

    def commit(self, message: str) -> str:
        self.minute += 1
        return self.repo.commit(message, self.minute)

    def step(self) -> None:
        repo, rng = self.repo, self.rng
        files = self.tracked()
        op = rng.choice(["edit", "edit", "add", "add", "delete", "rename", "revert", "chmod",
                         "submodule", "config", "merge"])
        if op == "edit" and files:
            repo.write(rng.choice(files), self.body())
        elif op == "delete" and files:
            repo.git("rm", "-q", "-f", rng.choice(files))
        elif op == "rename" and files:
            src, dst = rng.choice(files), self.name()
            if dst not in files:
                Path(repo.path / dst).parent.mkdir(parents=True, exist_ok=True)
                repo.git("mv", src, dst)
        elif op == "revert":
            target = repo.git("rev-list", "--no-merges", "-n", "1", f"--skip={rng.randrange(6)}",
                              "HEAD")
            if target and self._ok("revert", "--no-edit", "--no-commit", target):
                self.commit("revert")
            else:
                repo.git("reset", "-q", "--hard", "HEAD")
            return
        elif op == "chmod" and files:
            repo.git("update-index", "--chmod=" + rng.choice(["+x", "-x"]), rng.choice(files))
            self.minute += 1
            repo.git("commit", "-q", "--allow-empty", "-m", "mode", env=repo.dates(self.minute))
            return
        elif op == "submodule":
            # a commit of "another repository" whose text carries a value: never scanned here
            head = repo.git("commit-tree", "HEAD^{tree}", "-m", f"seed {rng.choice(VALUES)}")
            path = f"{rng.choice(FOLDERS)}/sub"
            if rng.random() < 0.5:
                repo.git("update-index", "--add", "--cacheinfo", f"160000,{head},{path}")
            else:
                repo.git("rm", "-q", "--cached", "--ignore-unmatch", path)
            self.minute += 1
            repo.git("commit", "-q", "--allow-empty", "-m", "submodule",
                     env=repo.dates(self.minute))
            return
        elif op == "config":
            repo.write("plimsoll.yaml", rng.choice(CONFIGS))
        elif op == "merge":
            self._merge()
            return
        else:
            repo.write(self.name(), self.body())
        self.commit(op)

    def _ok(self, *args: str) -> bool:
        """Run a git command that may conflict; True when it left no conflict behind."""
        proc = subprocess.run(["git", *args], cwd=self.repo.path, capture_output=True,
                              env={**os.environ, **self.repo.dates(self.minute)})
        return proc.returncode == 0 and not self.repo.git("diff", "--name-only",
                                                          "--diff-filter=U")

    def _merge(self) -> None:
        repo, rng = self.repo, self.rng
        branch = f"side{self.minute}"
        repo.git("checkout", "-q", "-b", branch)
        for _ in range(rng.randint(1, 3)):
            repo.write(self.name(), self.body())
            self.commit("side")
        repo.git("checkout", "-q", "main")
        repo.write(self.name(), self.body())
        self.commit("main meanwhile")
        if not self._ok("merge", "-q", "--no-ff", "--no-commit", "-X", "ours", branch):
            repo.git("merge", "--abort", check=False)
            return  # the branch stays unmerged: another tip
        if rng.random() < 0.4:  # an evil merge: the resolution itself brings content
            repo.write(rng.choice(["viewer/merge.txt", "tasks/a/merge.txt"]), self.body())
        self.commit("merge")
        if rng.random() < 0.3:
            repo.git("branch", "-D", branch)  # its commits stay reachable through the merge


def _generate(path: Path, seed: int, commits: int) -> GitRepo:
    repo = GitRepo(path)
    maker = _Maker(repo, seed)
    repo.write("plimsoll.yaml", CONFIGS[0])
    for folder in FOLDERS:
        repo.write(f"{folder}/start.txt", maker.body())
    maker.commit("start")
    while int(repo.git("rev-list", "--count", "--all")) < commits:
        maker.step()
    repo.git("checkout", "-q", "-b", "unmerged")  # a branch that never merges back
    repo.write("tasks/b/unmerged.txt", f"seed {VALUES[0]}\n")
    maker.commit("unmerged work")
    repo.git("checkout", "-q", "main")
    return repo


Seen = set[tuple[str, str, str, int, int, str, str]]  # (entry, set, path, line, column, chain, where)


def _from_scratch(repo: GitRepo, wset: withheld.WithheldSet) -> dict[str, Seen]:
    """Every commit judged alone: its own config, each ship set scanned in full."""
    out: dict[str, Seen] = {}
    for commit in repo.git("rev-list", "--all").split():
        seen: Seen = set()
        text = subprocess.run(["git", "show", f"{commit}:plimsoll.yaml"], cwd=repo.path,
                              capture_output=True).stdout
        try:
            cfg = ship.parse_config(text.decode(), "plimsoll.yaml", repo.path)
        except PlimsollError:
            cfg = None
        for name in cfg.ship if cfg is not None else ():
            files = ship.from_rev(repo.path, commit, cfg, set_name=name)
            for f in ShipScan(wset).scan(ship.items(files)).findings:
                seen.add((f.entry, name, _REDACTED.sub("[W]", f.path), f.line, f.column,
                          _REDACTED.sub("[W]", f.chain), f.where))
        out[commit] = seen
    return out


def _replayed(report: history.HistoryReport) -> dict[str, Seen]:
    out: dict[str, Seen] = {}
    for e in report.entries:
        for info, occ in e.commits:
            out.setdefault(info.oid, set()).update(
                (o.entry, o.set, _REDACTED.sub("[W]", o.path), o.line, o.column,
                 _REDACTED.sub("[W]", o.chain), o.where) for o in occ)
    return out


@pytest.mark.parametrize("seed, commits, jobs", [(1, 70, 1), (2, 70, 2), (3, 110, 2)])
def test_the_incremental_replay_judges_every_commit_as_a_scan_of_its_whole_tree(
        tmp_path: Path, seed: int, commits: int, jobs: int) -> None:
    repo = _generate(tmp_path / "repo", seed, commits)
    wset = withheld.load(make_set(tmp_path))
    options = history.Options(all_refs=True, every_commit=True, use_cache=False,
                              progress=False, jobs=jobs)
    report = history.replay(str(repo.path), wset, options)
    scratch = _from_scratch(repo, wset)
    assert report.commits_scanned == len(scratch)
    replayed = _replayed(report)
    leaking = {c for c, seen in scratch.items() if seen}
    assert leaking, "the generated history never shipped a value: the test would prove nothing"
    assert leaking != set(scratch), "every commit leaks: the test would prove nothing"
    for commit, seen in scratch.items():
        assert replayed.get(commit, set()) == seen, f"commit {commit[:12]}"
    # without --every-commit a report keeps per commit only the entries: the same windows
    lean = history.replay(str(repo.path), wset, options._replace(every_commit=False))
    assert [(e.entry, e.windows, e.commit_count) for e in lean.entries] == \
        [(e.entry, e.windows, e.commit_count) for e in report.entries]
    assert all(e.commits == [] for e in lean.entries)


def test_a_warm_replay_reports_exactly_what_a_cold_one_does(tmp_path: Path) -> None:
    # A warm run starts git's walk before its cache is read and takes every verdict from the
    # cache; a cold one starts its workers first and scans. Their reports are the same.
    repo = _generate(tmp_path / "repo", 4, 110)
    wset = withheld.load(make_set(tmp_path))
    options = history.Options(all_refs=True, every_commit=True, use_cache=False, progress=False,
                              jobs=2)
    cold = history.replay(str(repo.path), wset, options)
    assert cold.entries, "nothing leaked: the test would prove nothing"
    filling = history.replay(str(repo.path), wset, options._replace(use_cache=True))
    warm = history.replay(str(repo.path), wset, options._replace(use_cache=True))
    assert filling.blobs_from_cache == 0
    assert warm.blobs_from_cache == warm.blobs_scanned == cold.blobs_scanned
    for report in (filling, warm):
        assert history.to_json(report._replace(blobs_from_cache=0)) == history.to_json(cold)
