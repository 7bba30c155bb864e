"""Trees, not patches: merges, renames, reverts, archives, branches, per-commit configs."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from kit.cli import run_process
from kit.history import (
    GLOB_CONFIG,
    KIT,
    LEAK,
    PYTHON,
    SEEDS,
    GitRepo,
    checked_cli,
    history_json,
    make_set,
    many_steps,
    viewer,
)

from plimsoll_ci import history, withheld


def test_a_leak_that_first_appears_in_a_merge_commit_is_dated_to_the_merge(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.commit("start", 0)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("tasks/drone/notes.md", "wind model notes\n")
    repo.commit("side: notes", 5)
    repo.git("checkout", "-q", "main")
    repo.write("tasks/drone/TASK.md", "# Drone task, v2\n")
    repo.commit("main: task v2", 7)
    repo.git("merge", "-q", "--no-ff", "--no-commit", "side", env=repo.dates(10))
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))  # an "evil" merge
    merge = repo.commit("merge side", 10)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix = repo.commit("fix", 30)
    # a patch-based scan of history up to the merge never shows the merge's own content
    shown_by_patches = LEAK in repo.git("log", "-p", merge, "--", ".", ":!seeds.txt")
    assert not shown_by_patches
    code, doc = history_json(repo, wset_path)
    assert code == 1
    (e,) = doc["entries"]
    assert e["first"]["commit"] == merge and e["fixed"]["commit"] == fix
    assert e["window_seconds"] == 20 * 60
    assert e["first"]["paths"] == ["viewer/replay.html"]


def test_a_leak_inside_a_zip_blob_names_the_member(globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("tracks/about.txt", f"example flight: seed {LEAK}\n")
        z.writestr("tracks/other.txt", "nothing here\n")
        z.writestr(f"tracks/seed-{LEAK}.json", "{}\n")  # a member name that is the value
    repo.write("tasks/drone/assets.zip", buf.getvalue())
    first = repo.commit("assets", 0)
    code, doc = history_json(repo, wset_path)
    assert code == 1
    (e,) = doc["entries"]
    assert e["first"]["commit"] == first and e["fixed"] is None
    chains = sorted(f["chain"] for f in e["first"]["findings"])
    assert {f["path"] for f in e["first"]["findings"]} == {"tasks/drone/assets.zip"}
    assert "zip member tracks/about.txt" in chains
    # the member's name is the value: the report names the member without printing it
    assert any(c.startswith("zip member [withheld name 1]") for c in chains)


def test_a_leak_fixed_then_reintroduced_by_a_revert_has_two_windows(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    first = repo.commit("viewer", 0)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix1 = repo.commit("fix", 20)
    repo.git("revert", "--no-edit", "HEAD", env=repo.dates(60))
    again = repo.git("rev-parse", "HEAD")
    repo.write("tasks/drone/TASK.md", "# Drone task (again)\n")
    mid = repo.commit("unrelated", 70)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix2 = repo.commit("fix again", 90)
    code, doc = history_json(repo, wset_path, "--every-commit")
    assert code == 1
    (e,) = doc["entries"]
    w1, w2 = e["windows"]
    assert (w1["first"]["commit"], w1["fixed"]["commit"], w1["window_seconds"]) == (first, fix1, 1200)
    assert (w2["first"]["commit"], w2["fixed"]["commit"], w2["window_seconds"]) == (again, fix2, 1800)
    assert w2["commits"] == [again, mid]
    assert w2["ranges"] == [{"first": again, "last": mid, "commits": 2}]
    assert e["first"]["commit"] == first and e["fixed"]["commit"] == fix2
    assert e["window_seconds"] == 3000
    assert len(e["commits"]) == 3


def test_a_rename_into_a_shipped_folder_counts_from_the_rename(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write("drafts/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("draft viewer (not shipped)", 0)
    (repo.path / "viewer").mkdir()
    repo.git("mv", "drafts/replay.html", "viewer/replay.html")
    moved = repo.commit("ship the viewer", 15)
    code, doc = history_json(repo, wset_path)
    (e,) = doc["entries"]
    assert e["first"]["commit"] == moved and e["fixed"] is None


def test_a_config_change_that_starts_shipping_a_folder_is_the_first_leak(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write("plimsoll.yaml", GLOB_CONFIG.replace(', "viewer/**"', ""))
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("viewer exists but does not ship", 0)
    repo.write("plimsoll.yaml", GLOB_CONFIG)
    ships = repo.commit("ship the viewer too", 9)
    code, doc = history_json(repo, wset_path)
    (e,) = doc["entries"]
    assert e["first"]["commit"] == ships


def test_all_covers_branches_that_were_never_merged(globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.commit("start", 0)
    repo.git("checkout", "-q", "-b", "experiment")
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    exp = repo.commit("experiment", 5)
    repo.git("checkout", "-q", "--detach", "main")
    repo.write("tasks/drone/TASK.md", f"# tagged build with seed {SEEDS[2]}\n")
    tagged = repo.commit("tagged only", 6)
    repo.git("tag", "-a", "-m", "release", "v0.1")
    repo.git("checkout", "-q", "main")
    repo.write("tasks/drone/TASK.md", "# v2\n")
    repo.commit("main", 8)
    code, _doc = history_json(repo, wset_path)
    assert code == 0
    code, doc = history_json(repo, wset_path, "--all")
    assert code == 1
    firsts = {e["entry"]: e["first"]["commit"] for e in doc["entries"]}
    assert firsts == {"seeds.txt:2": exp, "seeds.txt:3": tagged}


def test_auditor_mode_judges_a_repo_that_had_no_config(tmp_path: Path, wset_path: Path) -> None:
    repo = GitRepo(tmp_path / "old")
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    first = repo.commit("viewer", 0)
    proc = checked_cli("history", "--set", str(wset_path), "--no-progress", cwd=repo.path)
    assert proc.returncode == 2 and "--config" in proc.stderr
    cfg = tmp_path / "audit.yaml"
    cfg.write_text("ship:\n  all:\n    include: [\"viewer/**\"]\n")
    code, doc = history_json(repo, wset_path, "--config", str(cfg))
    assert code == 1 and doc["entries"][0]["first"]["commit"] == first


def test_a_name_that_carries_the_value_is_found_and_never_printed(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write(f"tasks/drone/tracks/seed-{LEAK}.json", "{}\n")
    first = repo.commit("track", 0)
    for fmt in ("json", "text", "markdown", "sarif"):
        proc = checked_cli("history", "--set", str(wset_path), "--format", fmt, "--no-progress",
                       cwd=repo.path)  # checked_cli asserts the value is absent
        assert proc.returncode == 1
        # (SARIF percent-encodes the redacted name in its uri)
        assert "[withheld name 1]" in proc.stdout or "%5Bwithheld%20name%201%5D" in proc.stdout
    code, doc = history_json(repo, wset_path)
    (f,) = doc["entries"][0]["first"]["findings"]
    assert f["where"] == "name" and doc["entries"][0]["first"]["commit"] == first


def test_the_worker_pool_and_one_process_agree(globrepo: GitRepo, tmp_path: Path) -> None:
    repo = globrepo
    many_steps(repo)  # enough blobs (> 64) for the pool
    wset = withheld.load(make_set(tmp_path))
    one = history.replay(str(repo.path), wset, history.Options(jobs=1, use_cache=False,
                                                                progress=False))
    two = history.replay(str(repo.path), wset, history.Options(jobs=2, use_cache=False,
                                                                progress=False))
    assert one.blobs_scanned > 64
    assert history.to_json(one) == history.to_json(two)
    (e,) = one.entries
    assert len(e.windows) == 3  # seeds at steps 5, 55, 105, each overwritten 40 steps later


def test_an_external_config_in_a_subfolder_applies_its_globs_from_there(
        tmp_path: Path, wset_path: Path) -> None:
    repo = GitRepo(tmp_path / "mono")
    repo.write("harness/site/viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.write("other/viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    first = repo.commit("two viewers, one harness", 0)
    cfg = repo.path / "harness" / "audit.yaml"
    cfg.write_text("ship:\n  site:\n    root: site\n    include: [\"viewer/**\"]\n")
    code, doc = history_json(repo, wset_path, "--config", str(cfg))
    assert code == 1
    (e,) = doc["entries"]
    assert e["first"]["commit"] == first
    assert e["first"]["paths"] == ["harness/site/viewer/replay.html"]


def test_a_failing_builder_is_noted_and_its_set_carries_over(tmp_path: Path,
                                                            wset_path: Path) -> None:
    repo = GitRepo(tmp_path / "mixed")
    repo.write("plimsoll.yaml", f"ship:\n  drone:\n    command: {PYTHON} loop/kit.py {{out}}\n"
                                "  viewer:\n    include: [\"viewer/**\"]\n")
    repo.write("loop/kit.py", KIT)
    repo.write("tasks/drone/TASK.md", "# Drone task\n")
    repo.commit("base", 0)
    repo.write("tasks/drone/TASK.md", f"# Drone task\nTry seed {LEAK} first.\n")
    first = repo.commit("task names a seed", 10)
    repo.write("loop/kit.py", "import sys\nsys.exit(3)\n")
    broken = repo.commit("builder broken", 20)
    repo.write("loop/kit.py", KIT)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    both = repo.commit("builder back; viewer ships too", 30)
    repo.write("tasks/drone/TASK.md", "# Drone task\n")
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix = repo.commit("fix both", 40)
    code, doc = history_json(repo, wset_path, "--every-commit")
    assert code == 1
    (e,) = doc["entries"]
    assert (e["first"]["commit"], e["fixed"]["commit"]) == (first, fix)
    assert [c["commit"] for c in e["commits"]] == [first, broken, both]
    assert e["commits"][2]["paths"] == ["drone:tasks/drone/TASK.md", "drone:viewer/replay.html",
                                        "viewer/replay.html"]  # kit.py copies viewer/ too
    assert any(broken[:12] in n and "builder exited with code 3" in n for n in doc["notes"])


def test_a_keyed_set_needs_its_key(globrepo: GitRepo, tmp_path: Path) -> None:
    import os
    import subprocess as sp

    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    first = repo.commit("leak", 0)
    key = "history-test-key-0123456789abcdef"
    doc, _w = withheld.build_set(values=[(f"seeds.txt:{i}", s) for i, s in enumerate(SEEDS, 1)],
                                 key=key.encode())
    keyed = tmp_path / "keyed.json"
    keyed.write_text(withheld.dumps(doc))

    def run(*args: str, env_key: str | None) -> sp.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "HISTORY_KEY"}
        if env_key is not None:
            env["HISTORY_KEY"] = env_key
        return run_process("history", "--set", str(keyed), "--no-progress", "--format", "json",
                           *args, cwd=repo.path, env=env, inherit=False)

    ok = run("--key-env", "HISTORY_KEY", env_key=key)
    assert ok.returncode == 1 and json.loads(ok.stdout)["entries"][0]["first"]["commit"] == first
    assert run(env_key=None).returncode == 2
    wrong = run("--key-env", "HISTORY_KEY", env_key="another-key-entirely-0000000000")
    assert wrong.returncode == 2 and "wrong key" in wrong.stderr
    assert key not in ok.stdout + ok.stderr + wrong.stderr


def test_a_fix_on_a_side_branch_does_not_close_a_window_main_still_ships(
        globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    first = repo.commit("leak", 0)
    repo.git("checkout", "-q", "-b", "fix-branch")
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    repo.commit("fix on a branch", 10)
    repo.git("checkout", "-q", "main")
    repo.write("tasks/drone/TASK.md", "# v2\n")
    tip = repo.commit("main goes on", 20)
    code, doc = history_json(repo, wset_path, "--all", "--every-commit")
    (e,) = doc["entries"]
    assert e["first"]["commit"] == first and e["fixed"] is None
    assert e["windows"][0]["commits"] == [first, tip] and e["window_seconds"] == 20 * 60
    repo.git("merge", "-q", "--no-ff", "-m", "merge the fix", "fix-branch", env=repo.dates(30))
    merged = repo.git("rev-parse", "HEAD")
    code, doc = history_json(repo, wset_path, "--all")
    (e,) = doc["entries"]
    assert e["fixed"]["commit"] == merged and e["window_seconds"] == 30 * 60
