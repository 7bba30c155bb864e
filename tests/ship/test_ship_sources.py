"""The three sources of shipped content: the working tree, the git index, a commit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit.cli import run_process

from plimsoll_ci.shipscan import ship

CONFIG = """\
withheld: withheld.json
ship:
  viewer:
    include: ["viewer/**"]
    exclude: ["**/*.test.mjs"]
  built:
    command: %s kit.py {out}
"""

KIT = """\
import sys
from pathlib import Path
out = Path(sys.argv[1])
(out / "task").mkdir()
(out / "task" / "TASK.md").write_bytes(Path("viewer/index.html").read_bytes())
"""


def git(repo: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    (r / "viewer").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "a@example.org")
    git(r, "config", "user.name", "A")
    (r / "plimsoll.yaml").write_text(CONFIG % sys.executable)
    (r / "kit.py").write_text(KIT)
    (r / "viewer/index.html").write_text("v1\n")
    (r / "viewer/a.test.mjs").write_text("test\n")
    (r / "notes.md").write_text("not shipped\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "v1")
    return r


def shipped(files: list[ship.ShippedFile]) -> dict[tuple[str, str], bytes]:
    return {(f.set_name, f.path): f.data for f in files}


def test_each_source_ships_its_own_version(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    (repo / "viewer/index.html").write_text("v2\n")
    git(repo, "add", "viewer/index.html")
    (repo / "viewer/index.html").write_text("v3\n")
    (repo / "viewer/new.html").write_text("untracked\n")
    cfg = ship.load_config(repo / "plimsoll.yaml")
    work = shipped(ship.from_worktree(None, cfg))
    index = shipped(ship.from_index(repo, cfg))
    commit = shipped(ship.from_rev(repo, first, cfg))
    assert work[("viewer", "viewer/index.html")] == b"v3\n"
    assert work[("built", "task/TASK.md")] == b"v3\n"
    assert ("viewer", "viewer/new.html") in work  # untracked files ship from a folder too
    assert index[("viewer", "viewer/index.html")] == b"v2\n"
    assert index[("built", "task/TASK.md")] == b"v2\n"
    assert ("viewer", "viewer/new.html") not in index
    assert commit[("viewer", "viewer/index.html")] == b"v1\n"
    assert commit[("built", "task/TASK.md")] == b"v1\n"
    for files in (work, index, commit):
        assert ("viewer", "viewer/a.test.mjs") not in files
        assert not any(p in ("notes.md", "kit.py", "plimsoll.yaml") for _, p in files)


def test_the_index_source_reads_a_temporary_index_as_git_hooks_pass_it(repo: Path,
                                                                       monkeypatch) -> None:
    (repo / "viewer/index.html").write_text("partial\n")
    cfg = ship.load_config(repo / "plimsoll.yaml")
    tmp_index = repo / ".git" / "index.partial"
    env_index = {"GIT_INDEX_FILE": str(tmp_index)}
    subprocess.run(["git", "-C", str(repo), "read-tree", "HEAD"], env={**_env(), **env_index},
                   check=True)
    subprocess.run(["git", "-C", str(repo), "add", "viewer/index.html"],
                   env={**_env(), **env_index}, check=True)
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_index))
    files = shipped(ship.from_index(repo, cfg))
    # `git commit -a` / `git commit FILE` hand hooks a temporary index: that is what commits.
    assert files[("viewer", "viewer/index.html")] == b"partial\n"
    assert files[("built", "task/TASK.md")] == b"partial\n"


def _env() -> dict[str, str]:
    return dict(os.environ)


def test_a_builder_never_writes_into_the_users_working_tree(repo: Path) -> None:
    (repo / "kit.py").write_text(KIT + "Path('litter.txt').write_text('x')\n")
    git(repo, "add", "kit.py")
    cfg = ship.load_config(repo / "plimsoll.yaml")
    ship.from_index(repo, cfg, "built")
    ship.from_rev(repo, "HEAD", cfg, "built")
    assert not (repo / "litter.txt").exists()
    assert git(repo, "status", "--porcelain") == "M  kit.py"


def test_a_failing_builder_carries_its_exit_code_and_output(repo: Path) -> None:
    (repo / "kit.py").write_text("import sys\nprint('no gates file', file=sys.stderr)\nsys.exit(3)\n")
    cfg = ship.load_config(repo / "plimsoll.yaml")
    with pytest.raises(ship.BuilderFailed) as e:
        ship.from_worktree(None, cfg, "built")
    assert e.value.exit_code == 3 and "no gates file" in str(e.value)
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci.cli", "ship", "list"], cwd=repo,
                       capture_output=True, text=True)
    assert r.returncode == 3 and "no gates file" in r.stderr and r.stdout == ""


def test_a_builder_that_hangs_is_stopped_by_its_timeout(repo: Path) -> None:
    cfg = ship.load_config(repo / "plimsoll.yaml")
    s = cfg.ship["built"]._replace(command=f"{sys.executable} -c 'import time; time.sleep(30)' "
                                           "{out}", timeout=0.5)
    with pytest.raises(ship.BuilderFailed, match="timed out after 0.5 s"):
        ship.build_command_set(s, repo)


def test_the_builder_does_not_see_the_withheld_key(repo: Path, monkeypatch) -> None:
    monkeypatch.setenv("PLIMSOLL_WITHHELD_KEY", "k-not-for-builders")
    (repo / "plimsoll.yaml").write_text("key: {env: PLIMSOLL_WITHHELD_KEY}\n" +
                                        (repo / "plimsoll.yaml").read_text())
    (repo / "kit.py").write_text(
        "import os, sys\nfrom pathlib import Path\n"
        "Path(sys.argv[1], 'env.txt').write_text(os.environ.get('PLIMSOLL_WITHHELD_KEY', '-'))\n")
    cfg = ship.load_config(repo / "plimsoll.yaml")
    files = shipped(ship.from_worktree(None, cfg, "built"))
    assert files[("built", "env.txt")] == b"-"


def test_ship_list_prints_exactly_what_ships(repo: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci.cli", "ship", "list", "--rev", "HEAD"],
                       cwd=repo, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["viewer\tviewer/index.html\tviewer/index.html",
                                     "built\ttask/TASK.md\t(built)"]


def test_bad_revisions_and_sets_are_bad_input(repo: Path) -> None:
    for args, words in [(["--rev", "no-such-branch"], "is not a commit"),
                        (["--rev=--output=x"], "is not a revision"),
                        (["--set", "nope"], "no ship set named 'nope'"),
                        (["--config", "missing.yaml"], "no such config file")]:
        r = subprocess.run([sys.executable, "-m", "plimsoll_ci.cli", "ship", "list", *args],
                           cwd=repo, capture_output=True, text=True)
        assert r.returncode == 2 and words in r.stderr, (args, r.stderr)


def test_each_commit_is_judged_by_its_own_config(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    (repo / "plimsoll.yaml").write_text("withheld: withheld.json\nship:\n  all:\n"
                                        "    include: ['**/*.md']\n")
    git(repo, "commit", "-q", "-am", "ship the notes")
    _, at_first = ship.collect(None, None, False, first, repo)
    _, at_tip = ship.collect(None, None, False, "HEAD", repo)
    assert {f.set_name for f in at_first} == {"viewer", "built"}
    assert {f.path for f in at_tip} == {"notes.md"}
    # An explicit --config is the auditor's: the same ship sets for every commit.
    ext = repo.parent / "audit.yaml"
    ext.write_text("ship:\n  v:\n    include: ['viewer/*.html']\n")
    _, audited = ship.collect(str(ext), None, False, first, repo)
    assert [(f.path, f.source) for f in audited] == [("viewer/index.html", "viewer/index.html")]


def test_symlinks_in_a_folder_ship_as_links_not_as_what_they_point_at(tmp_path: Path) -> None:
    (tmp_path / "viewer").mkdir()
    (tmp_path / "viewer/loop").symlink_to(tmp_path / "viewer")
    (tmp_path / "viewer/index.html").write_text("ok\n")
    cfg = ship.parse_config("ship: {v: {include: ['viewer/**']}}\n", "p.yaml", tmp_path)
    files = shipped(ship.from_worktree(None, cfg))
    assert files[("v", "viewer/index.html")] == b"ok\n"
    assert files[("v", "viewer/loop")] == str(tmp_path / "viewer").encode()


def test_a_fifo_or_a_link_to_a_device_cannot_hang_the_scan(tmp_path: Path) -> None:
    (tmp_path / "viewer").mkdir()
    os.mkfifo(tmp_path / "viewer/pipe")
    (tmp_path / "viewer/zero").symlink_to("/dev/zero")
    (tmp_path / "private-seeds.txt").write_text("3107713414\n")
    (tmp_path / "viewer/seeds").symlink_to(tmp_path / "private-seeds.txt")
    cfg = ship.parse_config("ship: {v: {include: ['viewer/**']}}\n", "p.yaml", tmp_path)
    files = shipped(ship.from_worktree(None, cfg))
    assert files[("v", "viewer/pipe")] == b""
    assert files[("v", "viewer/zero")] == b"/dev/zero"
    assert files[("v", "viewer/seeds")] == b"3107713414\n"  # a link ships what it points at


def test_scan_config_scans_what_the_chosen_source_ships(repo: Path) -> None:
    from plimsoll_ci import withheld

    doc, _ = withheld.build_set(values=[("seeds.txt:2", "3107713414")], key=b"k")
    (repo / "withheld.json").write_text(withheld.dumps(doc))
    (repo / "plimsoll.yaml").write_text("key: {env: SHIP_TEST_KEY}\n" +
                                        (repo / "plimsoll.yaml").read_text())
    (repo / "viewer/index.html").write_text('<a href="seed-3107713414.json">x</a>\n')
    git(repo, "add", "viewer/index.html", "plimsoll.yaml")
    (repo / "viewer/index.html").write_text("clean again\n")
    env = {**os.environ, "SHIP_TEST_KEY": "k"}

    def scan(*args: str) -> subprocess.CompletedProcess:
        return run_process("scan", "--config", "plimsoll.yaml", *args, cwd=repo, env=env,
                           inherit=False, module='plimsoll_ci.cli')

    staged = scan("--staged")
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert "viewer/index.html:1:" in staged.stdout and "built:task/TASK.md" in staged.stdout
    assert "3107713414" not in staged.stdout + staged.stderr
    assert scan().returncode == 0  # the working tree is clean
    assert scan("--rev", "HEAD").returncode == 0  # so is the last commit


def test_ship_without_an_action_or_a_config_is_bad_input(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for args, words in [(["ship"], "ship list"), (["ship", "list"], "no plimsoll.yaml")]:
        r = subprocess.run([sys.executable, "-m", "plimsoll_ci.cli", *args], cwd=tmp_path,
                           capture_output=True, text=True)
        assert r.returncode == 2 and words in r.stderr, r.stderr


def test_a_root_set_ships_paths_below_its_root(repo: Path) -> None:
    (repo / "site/seed-3107713414").mkdir(parents=True)
    (repo / "site/seed-3107713414/index.html").write_text("page\n")
    (repo / "site/a.css").write_text("css\n")
    (repo / "plimsoll.yaml").write_text("ship:\n  site:\n    root: site/seed-3107713414\n"
                                        "    include: ['*.html']\n")
    git(repo, "add", "-A")
    cfg = ship.load_config(repo / "plimsoll.yaml")
    for files in (ship.from_index(repo, cfg), ship.from_worktree(None, cfg)):
        # Inside the sandbox the file is `index.html`: the folder above the root does not ship.
        assert [(f.path, f.source) for f in files] == [
            ("index.html", "site/seed-3107713414/index.html")]


def test_ship_list_prints_one_line_per_file_whatever_its_name(repo: Path) -> None:
    import base64
    import json

    odd = b"viewer/a\tb\nforged\x1b[2J\xff.html"
    with open(os.path.join(os.fsencode(repo), odd), "wb") as fh:
        fh.write(b"x\n")
    cmd = [sys.executable, "-m", "plimsoll_ci", "ship", "list", "--set", "viewer"]
    text = subprocess.run(cmd, cwd=repo, capture_output=True, check=True).stdout.decode()
    lines = text.splitlines()
    assert len(lines) == 2 and all(ln.count("\t") == 2 for ln in lines), lines
    assert "viewer\tviewer/a\\x09b\\x0aforged\\x1b[2J\\xff.html\t" in text
    doc = json.loads(subprocess.run([*cmd, "--format", "json"], cwd=repo, capture_output=True,
                                    check=True).stdout)
    [entry] = [f for f in doc["files"] if "path_bytes" in f]
    assert base64.b64decode(entry["path_bytes"]) == odd
