"""The per-entry summary: `first`, `fixed` and the shipped time, on parallel lines of history."""

from __future__ import annotations

from pathlib import Path

from kit.history import LEAK, GitRepo, checked_cli, history_json, viewer


def _text(repo: GitRepo, wset: Path, *args: str) -> str:
    proc = checked_cli("history", "--set", str(wset), "--no-progress", *args, cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    return proc.stdout


def _fixed(doc: dict) -> list[str | None]:
    return [w["fixed"]["commit"] if w["fixed"] else None for w in doc["windows"]]


def test_fixed_is_null_while_the_tip_ships_a_leak_a_merged_side_line_fixed_on_its_own(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    base = repo.commit("start", 0)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    intro = repo.commit("main: the viewer names a seed (never fixed)", 10)
    repo.git("checkout", "-q", "-b", "side", base)
    repo.write("tasks/drone/TASK.md", f"# Drone task\nTry seed {LEAK}.\n")
    side = repo.commit("side: the task names it too", 15)
    repo.write("tasks/drone/TASK.md", "# Drone task\n")
    side_fix = repo.commit("side: fixed there", 18)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side", env=repo.dates(30))
    merge = repo.git("rev-parse", "HEAD")
    _code, doc = history_json(repo, wset_path, "--every-commit")  # HEAD's history, no --all
    (e,) = doc["entries"]
    assert [w["first"]["commit"] for w in e["windows"]] == [intro, side]
    assert _fixed(e) == [None, side_fix]
    assert e["windows"][0]["commits"] == [intro, merge]
    assert e["fixed"] is None
    headline = _text(repo, wset_path).splitlines()[0]
    assert headline.endswith("(still shipping)")


def test_fixed_is_null_while_another_branch_tip_still_ships_it(globrepo: GitRepo,
                                                               wset_path: Path) -> None:
    repo = globrepo
    repo.commit("start", 0)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    intro = repo.commit("the viewer names a seed", 10)
    repo.git("checkout", "-q", "-b", "release-1")
    repo.write("tasks/drone/TASK.md", "# Drone task, release 1\n")
    release = repo.commit("release 1 (still ships the viewer)", 12)
    repo.git("checkout", "-q", "main")
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    repo.commit("fix", 20)
    repo.write("tasks/drone/TASK.md", f"# Drone task\nTry seed {LEAK}.\n")
    again = repo.commit("the task names it", 30)
    repo.write("tasks/drone/TASK.md", "# Drone task\n")
    fix2 = repo.commit("fixed again", 40)
    _code, doc = history_json(repo, wset_path)
    assert doc["entries"][0]["fixed"]["commit"] == fix2  # main alone: fixed
    _code, doc = history_json(repo, wset_path, "--all", "--every-commit")
    (e,) = doc["entries"]
    assert [w["first"]["commit"] for w in e["windows"]] == [intro, again]
    assert _fixed(e) == [None, fix2]
    assert e["windows"][0]["commits"] == [intro, release]
    assert e["fixed"] is None
    text = _text(repo, wset_path, "--all")
    assert text.splitlines()[0].endswith("(still shipping)") and "(fixed)" not in text


def test_a_branch_or_tag_that_points_at_a_leaking_commit_keeps_its_window_open(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.commit("start", 0)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    intro = repo.commit("the viewer names a seed", 10)
    repo.git("tag", "-a", "-m", "release 1", "v1")  # v1 ships the seed, whatever main does next
    repo.git("tag", "a-tree", "HEAD^{tree}")  # a tag that names no commit is no tip
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix = repo.commit("fix", 20)
    _code, doc = history_json(repo, wset_path)
    assert doc["entries"][0]["fixed"]["commit"] == fix
    _code, doc = history_json(repo, wset_path, "--all")
    (e,) = doc["entries"]
    assert e["first"]["commit"] == intro and e["fixed"] is None
    assert _fixed(e) == [None]
    _code, doc = history_json(repo, wset_path, "v1", "main")  # the same, named as revisions
    assert doc["entries"][0]["fixed"] is None


def _parallel_introductions(repo: GitRepo) -> dict[str, str]:
    """A seed leaks on a side branch at minute 5 and, independently, on main at minute 10; main
    fixes its own at minute 20; the side branch is merged at minute 30 and ships it to the tip.
    `git log --topo-order` lists main's line first.
    """
    base = repo.commit("start", 0)
    repo.git("checkout", "-q", "-b", "side", base)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    side = repo.commit("side: the viewer names a seed", 5)
    repo.git("checkout", "-q", "main")
    repo.write("tasks/drone/TASK.md", f"# Drone task\nTry seed {LEAK}.\n")
    main = repo.commit("main: the task names it", 10)
    repo.write("tasks/drone/TASK.md", "# Drone task\n")
    main_fix = repo.commit("main: fixed", 20)
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side", env=repo.dates(30))
    return {"side": side, "main": main, "main_fix": main_fix, "merge": repo.git("rev-parse", "HEAD")}


def test_first_is_the_earliest_introduction_by_time_and_windows_are_in_time_order(
        globrepo: GitRepo, wset_path: Path) -> None:
    c = _parallel_introductions(globrepo)
    _code, doc = history_json(globrepo, wset_path)
    (e,) = doc["entries"]
    assert e["first"]["commit"] == c["side"]
    assert [w["first"]["commit"] for w in e["windows"]] == [c["side"], c["main"]]
    assert e["first"]["paths"] == ["viewer/replay.html"]
    lines = _text(globrepo, wset_path).splitlines()
    tags = [(line.split()[0], line.split()[1]) for line in lines if line.startswith("  ")
            and line.split()[0] in ("first", "again")]
    assert tags == [("first", c["side"][:12]), ("again", c["main"][:12])]


def test_the_shipped_time_is_the_union_of_overlapping_windows(globrepo: GitRepo,
                                                              wset_path: Path) -> None:
    _parallel_introductions(globrepo)
    _code, doc = history_json(globrepo, wset_path)
    (e,) = doc["entries"]
    # side: minutes 5-30 (open, to the merge); main: minutes 10-20, inside it
    assert sorted(w["window_seconds"] for w in e["windows"]) == [10 * 60, 25 * 60]
    assert e["window_seconds"] == 25 * 60
    assert e["fixed"] is None
    headline = _text(globrepo, wset_path).splitlines()[0]
    assert headline.startswith("seeds.txt:2: shipped 25 min across 3 commits in 2 windows")


def test_disjoint_windows_add_up(globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("leak", 0)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    repo.commit("fix", 20)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("leak again", 60)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix2 = repo.commit("fix again", 90)
    _code, doc = history_json(repo, wset_path)
    (e,) = doc["entries"]
    assert e["window_seconds"] == (20 + 30) * 60 and e["fixed"]["commit"] == fix2


def test_a_value_in_a_folder_name_is_reported_once_per_folder(globrepo: GitRepo,
                                                              wset_path: Path) -> None:
    repo = globrepo
    for i in range(12):
        repo.write(f"tasks/drone/seed-{LEAK}/track{i:02}.json", "{}\n")
    first = repo.commit("twelve tracks in a folder named for a seed", 0)
    repo.write(f"tasks/drone/seed-{LEAK}/more.json", "{}\n")
    second = repo.commit("one more", 5)
    _code, doc = history_json(repo, wset_path, "--every-commit")
    (e,) = doc["entries"]
    for c in e["commits"]:
        (f,) = c["findings"]
        assert f["where"] == "name" and "folder name" in f["chain"]
        assert f["path"] == "tasks/drone/[withheld name 1]/"
        assert c["paths"] == ["tasks/drone/[withheld name 1]/"]
    assert [c["commit"] for c in e["commits"]] == [first, second]
    text = _text(repo, wset_path)
    assert text.count("[withheld name 1]/ (name)") == 1
    proc = checked_cli("scan", "--rev", "HEAD", "--set", str(wset_path), "--format", "json",
                   cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count('"where": "name"') == 1  # as the ship scan reports it


def test_a_folder_name_inside_a_builders_output_is_reported_once(tmp_path: Path,
                                                                 wset_path: Path) -> None:
    from kit.history import KIT, PYTHON

    repo = GitRepo(tmp_path / "built")
    repo.write("plimsoll.yaml", f"ship:\n  drone:\n    command: {PYTHON} loop/kit.py {{out}}\n")
    repo.write("loop/kit.py", KIT)
    for i in range(3):
        repo.write(f"viewer/seed-{LEAK}/t{i}.json", "{}\n")
    repo.commit("built tracks", 0)
    _code, doc = history_json(repo, wset_path)
    (e,) = doc["entries"]
    (f,) = e["first"]["findings"]
    assert f["path"] == "drone:viewer/[withheld name 1]/"
