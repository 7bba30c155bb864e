"""Shallow clones, missing objects, huge blobs, submodules, non-UTF-8 paths, Ctrl-C, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.history import LEAK, PYTHON, GitRepo, checked_cli, history_json, make_set, viewer


def test_a_shallow_clone_is_refused_unless_shallow_ok(globrepo: GitRepo, wset_path: Path,
                                                      tmp_path: Path) -> None:
    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("leak", 0)
    for i in range(1, 4):
        repo.write("tasks/drone/TASK.md", f"# v{i}\n")
        repo.commit(f"v{i}", i * 10)
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{repo.path}", str(clone)],
                   check=True)
    proc = checked_cli("history", "--set", str(wset_path), "--no-progress", cwd=clone)
    assert proc.returncode == 2
    assert "shallow clone" in proc.stderr and "--shallow-ok" in proc.stderr
    proc = checked_cli("history", "--set", str(wset_path), "--format", "json", "--no-progress",
                   "--shallow-ok", cwd=clone)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["commits_scanned"] == 2
    assert any("shallow clone" in n for n in doc["notes"])


def _loose_object(repo: GitRepo, oid: str) -> Path:
    return repo.path / ".git" / "objects" / oid[:2] / oid[2:]


def test_a_missing_blob_is_noted_and_the_rest_is_judged(globrepo: GitRepo,
                                                        wset_path: Path) -> None:
    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.write("tasks/drone/extra.md", "a file whose object goes missing\n")
    repo.commit("leak and extra", 0)
    oid = repo.git("rev-parse", "HEAD:tasks/drone/extra.md")
    _loose_object(repo, oid).unlink()
    code, doc = history_json(repo, wset_path)
    assert code == 1 and doc["entries"][0]["entry"] == "seeds.txt:2"
    assert any("missing from the object store" in n and "tasks/drone/extra.md" in n
               for n in doc["notes"])


def test_a_huge_blob_is_scanned_up_to_the_bound_and_noted(globrepo: GitRepo,
                                                          wset_path: Path) -> None:
    repo = globrepo
    repo.write("tasks/drone/big.log", b"x" * 2_000_000 + f"\nseed {LEAK}\n".encode())
    repo.commit("big log", 0)
    code, doc = history_json(repo, wset_path, "--max-blob-bytes", "1000000", "--no-cache")
    assert code == 0
    assert any("over the 1000000-byte bound" in n and "big.log" in n for n in doc["notes"])
    code, doc = history_json(repo, wset_path, "--no-cache")
    assert code == 1


def test_a_submodule_is_noted_not_scanned(globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    base = repo.commit("start", 0)
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{base},tasks/drone/vendor")
    repo.git("commit", "-q", "-m", "vendor a submodule", env=repo.dates(5))
    code, doc = history_json(repo, wset_path)
    assert code == 0
    assert any("tasks/drone/vendor is a submodule" in n for n in doc["notes"])


def test_non_utf8_paths_are_judged_and_shown_escaped(globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write(b"tasks/drone/caf\xe9-notes.txt", f"seed {LEAK}\n")
    first = repo.commit("latin-1 name", 0)
    repo.write(b"tasks/drone/\xe9t\xe9/seed-" + LEAK.encode() + b".json", "{}\n")
    second = repo.commit("latin-1 folder, a name that carries the value", 5)
    code, doc = history_json(repo, wset_path, "--every-commit")  # the value is never printed (checked_cli checks)
    assert code == 1
    e = doc["entries"][0]
    assert e["first"]["commit"] == first
    assert e["first"]["paths"] == ["tasks/drone/caf\\xe9-notes.txt"]
    assert e["commits"][1]["commit"] == second
    assert "tasks/drone/\\xe9t\\xe9/[withheld name 1]" in e["commits"][1]["paths"]


CHECKING_KIT = '''import os, shutil, sys, time
marks = os.environ.get("HISTORY_TEST_MARKS")
if marks:
    with open(marks, "a") as f:
        f.write("built\\n")
time.sleep(0.25)
os.makedirs(os.path.join(sys.argv[1], "viewer"), exist_ok=True)
shutil.copyfile("viewer/replay.html", os.path.join(sys.argv[1], "viewer", "replay.html"))
'''


def test_ctrl_c_leaves_a_consistent_cache_and_the_rerun_agrees(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "slow")
    repo.write("plimsoll.yaml", f"ship:\n  drone:\n    command: {PYTHON} loop/kit.py {{out}}\n")
    repo.write("loop/kit.py", CHECKING_KIT)
    steps = []
    for i in range(8):
        example = f"seed-{LEAK}.json" if 2 <= i < 5 else f"seed-example-{i}.json"
        repo.write("viewer/replay.html", viewer(example))
        steps.append(repo.commit(f"step {i}", i * 5))
    wset = make_set(tmp_path)
    marks = tmp_path / "marks"
    env = {**os.environ, "HISTORY_TEST_MARKS": str(marks)}
    proc = subprocess.Popen([sys.executable, "-m", "plimsoll_ci", "history", "--set", str(wset),
                             "--format", "json", "--no-progress"], cwd=repo.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if marks.exists() and marks.read_text().count("built") >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    cache = repo.path / ".git" / "plimsoll-cache"
    leftovers = [p.name for p in cache.iterdir()] if cache.exists() else []
    assert all(name.startswith("scan-") and name.endswith(".json") for name in leftovers)
    for name in leftovers:
        json.loads((cache / name).read_text())  # whole, never torn
    code, warm = history_json(repo, wset, "--every-commit")
    assert code == 1
    (e,) = warm["entries"]
    assert e["first"]["commit"] == steps[2] and e["fixed"]["commit"] == steps[5]
    assert e["window_seconds"] == 15 * 60 and e["windows"][0]["commits"] == steps[2:5]


def test_a_torn_or_foreign_cache_file_is_ignored(globrepo: GitRepo, wset_path: Path) -> None:
    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("leak", 0)
    _code, good = history_json(repo, wset_path)
    cache = repo.path / ".git" / "plimsoll-cache"
    (name,) = [p for p in cache.iterdir()]
    name.write_text('{"format": "plimsoll-history-cache/1", "content": {"ab')
    (cache / ".tmp-scan-leftover").write_text("half")
    code, doc = history_json(repo, wset_path)
    assert code == 1 and doc["entries"] == good["entries"]
    assert any("unreadable and is rebuilt" in n for n in doc["notes"])


def test_the_cache_is_reused_and_keyed_by_the_withheld_set(globrepo: GitRepo, wset_path: Path,
                                                           tmp_path: Path) -> None:
    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("leak", 0)
    _c, cold = history_json(repo, wset_path)
    _c, warm = history_json(repo, wset_path)
    assert cold["blobs_from_cache"] == 0 and warm["blobs_from_cache"] == warm["blobs_scanned"]
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = make_set(other_dir, ["1234567891"])
    code, doc = history_json(repo, other)
    assert code == 0 and doc["blobs_from_cache"] == 0
    assert len(list((repo.path / ".git" / "plimsoll-cache").glob("scan-*.json"))) == 2


@pytest.mark.parametrize("args, message", [
    (["--set", "nope.json"], "no such file"),
    (["--set", "{bad}", "main..nowhere"], "nowhere"),
    (["--set", "{bad}", "--all", "main"], "exclusive"),
    (["--set", "{bad}", "--bisect", "seeds.txt:99"], "no such entry"),
    (["--set", "{bad}", "--max-blob-bytes", "0"], "--max-blob-bytes"),
    (["--set", "{bad}", "--config", "missing.yaml"], "missing.yaml"),
    (["--set", "{bad}", "--repo", "{outside}"], "not a git repository"),
    (["--set", "{malformed}"], "not valid JSON"),
])
def test_bad_input_exits_2_with_a_message_naming_the_problem(
        globrepo: GitRepo, wset_path: Path, tmp_path: Path, args: list[str], message: str) -> None:
    globrepo.commit("start", 0)
    outside = tmp_path / "outside"
    outside.mkdir()
    malformed = tmp_path / "malformed.json"
    malformed.write_text("{not json")
    args = [a.format(bad=wset_path, outside=outside, malformed=malformed) for a in args]
    proc = checked_cli("history", *args, "--no-progress", cwd=globrepo.path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stderr.count("error:") == 1


def test_builds_are_cached_by_the_tree_of_the_builders_inputs(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "inputs")
    repo.write("plimsoll.yaml", f"ship:\n  drone:\n    command: {PYTHON} loop/kit.py {{out}}\n"
                                "    inputs: [\"loop/**\", \"viewer/**\"]\n")
    repo.write("loop/kit.py", CHECKING_KIT.replace("time.sleep(0.25)", "pass"))
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    first = repo.commit("viewer", 0)
    for i in range(1, 4):
        repo.write("README.md", f"notes {i}\n")  # not an input: no rebuild
        repo.commit(f"readme {i}", i)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    fix = repo.commit("fix", 10)
    wset = make_set(tmp_path)
    marks = tmp_path / "marks"
    env = {**os.environ, "HISTORY_TEST_MARKS": str(marks)}

    def run() -> dict:
        proc = run_process("history", "--set", str(wset), "--format", "json", "--no-progress",
                           "--every-commit", cwd=repo.path, env=env, inherit=False)
        assert proc.returncode == 1, proc.stderr
        return json.loads(proc.stdout)

    doc = run()
    assert marks.read_text().count("built") == 2  # the first commit and the fix
    (e,) = doc["entries"]
    assert (e["first"]["commit"], e["fixed"]["commit"]) == (first, fix)
    assert len(e["commits"]) == 4
    assert run()["entries"] == doc["entries"]
    assert marks.read_text().count("built") == 2  # warm: every build came from the cache


def test_a_progress_bar_shows_on_a_terminal_and_not_in_the_report(globrepo: GitRepo,
                                                                  wset_path: Path) -> None:
    import pty

    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("leak", 0)
    import threading

    master, slave = pty.openpty()
    seen = bytearray()

    def drain() -> None:  # read while the command runs, so a full terminal never blocks it
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([sys.executable, "-m", "plimsoll_ci", "history", "--set",
                               str(wset_path)], cwd=repo.path, stderr=slave,
                              stdout=subprocess.PIPE, env={**os.environ, "COLUMNS": "100"},
                              timeout=120)
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    assert proc.returncode == 1
    assert b"commits" in seen  # the bar, on the terminal
    leaked = LEAK.encode() in bytes(seen) + proc.stdout
    assert not leaked
    assert b"\x1b[" not in proc.stdout and b"seeds.txt:2: shipped" in proc.stdout
