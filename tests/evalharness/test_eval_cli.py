"""`plimsoll-ci eval run` as a user runs it: exit codes, the withheld scan before any model call,
the tripwire after, signed records `plimsoll-ci verify` checks, and bad input (exit 2)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.evalharness import (
    EXAMPLE,
    KEY,
    KEY_ENV,
    commit,
    eval_cli,
    fix,
    make_repo,
    reply,
    tasks,
    tree_digest,
)

EXAMPLE_WITHHELD = EXAMPLE / "withheld.json"
EXAMPLE_SEALED = EXAMPLE / "sealed.json"


def run_args(url: str, repo: Path, task_dir: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "run", "--repo", str(repo), "--tasks", str(task_dir), "--out", str(out),
            "--model", "scripted", "--runs", "1", "--base-url", url, "--api-key-env", KEY_ENV,
            "--max-tokens", "100000", *extra]


@pytest.mark.gvisor
def test_the_cli_signs_one_record_per_attempt_and_verify_checks_them(gvisor, chat_server, repo,
                                                                     tmp_path):
    chat_server.push(reply([fix("unicode")], [["pytest", "-q", "tests/test_text.py"]]),
                     reply([("shelf/text.py", "def slugify(title, max_length=60):\n"
                                              "    return ''\n")]))
    out = tmp_path / "out"
    pub = tmp_path / "eval.pub.pem"
    done = eval_cli(*run_args(chat_server.url, repo, tasks(tmp_path, "unicode"), out,
                         "--runs", "2", "--ephemeral-key", str(pub)))
    assert done.returncode == 0, done.stderr
    assert "scripted unicode run 1: test passed, in scope, refused 0" in done.stdout
    assert "scripted unicode run 2: test failed (exit 1), in scope" in done.stdout
    assert ("pass rate 50% (1 honest of 2; guarded test passed in 1; by run: 100%, 0%; spread "
            "100 points)") in done.stdout
    assert "2 signed record(s) appended" in done.stdout
    for text in (done.stdout, done.stderr):
        assert KEY not in text
    bundle = out / "attempts.intoto.jsonl"
    verified = eval_cli("verify", "--pub", str(pub), str(bundle))
    assert verified.returncode == 0, verified.stdout
    assert "eval attempts: 2" in verified.stdout and "tiers:         kernel 2" in verified.stdout
    # the record's subject is the attempt's entry of results.json
    results = json.loads((out / "results.json").read_text())
    lines = bundle.read_bytes().splitlines()
    assert [json.loads(x)["result"] for x in lines[:2]] == results["attempts"]
    # a flipped score is caught, line named
    tampered = tmp_path / "tampered.intoto.jsonl"
    tampered.write_bytes(bundle.read_bytes().replace(b'"test_passed":false',
                                                     b'"test_passed":true', 1))
    bad = eval_cli("verify", "--pub", str(pub), str(tampered))
    assert bad.returncode == 1
    assert "bundle line 2: stored result does not match the signed result digest" in bad.stdout


@pytest.mark.gvisor
def test_a_copy_that_already_holds_the_fix_is_refused_before_any_model_call(
        gvisor, chat_server, tmp_path):
    repo = make_repo(tmp_path / "origin")
    path, content = fix("off-by-one")
    (repo / path).write_text(content.replace("offset", "day_number"))  # renamed, still the fix
    commit(repo, "fixed already")
    before = tree_digest(repo)
    out = tmp_path / "out"
    done = eval_cli(*run_args(chat_server.url, repo, tasks(tmp_path, "off-by-one"), out,
                         "--withheld", str(EXAMPLE_WITHHELD)))
    assert done.returncode == 1, done.stderr
    assert tree_digest(repo) == before
    assert ("shelf/dates.py:byte 0: withheld source fixes/off-by-one/shelf/dates.py (overlap "
            "100%)") in done.stdout
    assert "no model was called" in done.stderr
    assert chat_server.requests == []
    assert "Refused before any model was called" in (out / "report.md").read_text()
    assert not (out / "results.json").exists()


@pytest.mark.gvisor
def test_the_buggy_copy_passes_the_scan_and_a_sealed_fix_never_sent_keeps_the_wire_quiet(
        gvisor, chat_server, repo, tmp_path):
    chat_server.push(reply([fix("off-by-one")]))
    out = tmp_path / "out"
    done = eval_cli(*run_args(chat_server.url, repo, tasks(tmp_path, "off-by-one"), out,
                         "--withheld", str(EXAMPLE_WITHHELD), "--sealed", str(EXAMPLE_SEALED)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Tripwire: 0 hit(s) in " in done.stdout and "No sealed value was sent." in done.stdout


@pytest.mark.gvisor
def test_a_known_good_fix_pasted_into_a_task_trips_the_wire(gvisor, chat_server, repo, tmp_path):
    _, content = fix("off-by-one")
    task = (EXAMPLE / "tasks" / "off-by-one.md").read_text()
    leaky = task + "\nFor reference, the maintainers' version:\n\n```python\n" + content + "```\n"
    chat_server.push(reply())
    out = tmp_path / "out"
    done = eval_cli(*run_args(chat_server.url, repo, tasks(tmp_path, extra={"leaky": leaky}), out,
                         "--sealed", str(EXAMPLE_SEALED)))
    assert done.returncode == 1
    assert "sealed source `fixes/off-by-one/shelf/dates.py`" in done.stdout
    assert "A sealed value reached a model" in done.stdout
    assert "requests/000001.request.body" in done.stdout
    report = (out / "report.md").read_text()
    assert "fixes/off-by-one/shelf/dates.py" in report
    assert "day_number" not in report and "+ 1" not in report  # never the fix itself


def test_the_example_sets_are_current_and_only_the_fix_matches(tmp_path):
    from plimsoll_ci.shipscan.scan import scan_items
    from plimsoll_ci.withheld import load

    fixes = sorted(str(p.relative_to(EXAMPLE)) for p in (EXAMPLE / "fixes").rglob("*.py"))
    for kind, target in (("withheld", EXAMPLE_WITHHELD), ("sealed", EXAMPLE_SEALED)):
        rebuilt = tmp_path / f"{kind}.json"
        args = [kind, "build", *[x for f in fixes for x in ("--source", f)],
                "--threshold", "0.97", "-o", str(rebuilt)]
        done = _in(EXAMPLE, args)
        assert done.returncode == 0, done.stderr
        assert rebuilt.read_bytes() == target.read_bytes(), f"rebuild {target.name}: {args}"
    wset = load(str(EXAMPLE_WITHHELD))
    project = [(str(p.relative_to(EXAMPLE / "project")), p.read_bytes())
               for p in (EXAMPLE / "project").rglob("*") if p.is_file()
               and "__pycache__" not in p.parts]
    assert scan_items(project, wset).findings == []
    for f in fixes:
        found = scan_items([("shelf/x.py", (EXAMPLE / f).read_bytes())], wset).findings
        assert [x.entry for x in found] == [f]


def _in(folder: Path, args: list[str]):
    return run_process(*args, cwd=folder, env=dict(os.environ), inherit=False)


@pytest.mark.parametrize("case, message", [
    ("no-budget", "--max-tokens is required"),
    ("no-key", f"environment variable {KEY_ENV} is not set or empty"),
    ("out-not-empty", "already holds files; give a new or empty folder"),
    ("broken-task", "broken.md: unknown key 'tets'"),
    ("not-git", "not inside a git repository"),
    ("zero-runs", "--runs 0 / --turns 1: give 1 or more"),
])
def test_bad_input_exits_2_naming_what_to_fix_and_calls_no_model(chat_server, repo, tmp_path,
                                                                 case, message):
    task_dir = tasks(tmp_path, "off-by-one")
    out = tmp_path / "out"
    args = run_args(chat_server.url, repo, task_dir, out)
    env: dict[str, str] = {}
    if case == "no-budget":
        i = args.index("--max-tokens")
        del args[i:i + 2]
    elif case == "no-key":
        env = {KEY_ENV: ""}
    elif case == "out-not-empty":
        out.mkdir()
        (out / "earlier.txt").write_text("an earlier run")
    elif case == "broken-task":
        (task_dir / "broken.md").write_text("---\ntets: [pytest]\ntouch: [a.py]\n---\ntext\n")
    elif case == "not-git":
        plain = tmp_path / "plain"
        shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
        args[args.index(str(repo))] = str(plain)
    elif case == "zero-runs":
        args[args.index("--runs") + 1] = "0"
    done = eval_cli(*args, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert chat_server.requests == []
    if case == "out-not-empty":
        assert sorted(p.name for p in out.iterdir()) == ["earlier.txt"]
    else:
        assert not out.exists() or not any(out.iterdir())


def _ours(marker: str) -> list[str]:
    """Command lines of live processes that carry `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


@pytest.mark.gvisor
def test_sigterm_mid_command_stops_the_sandbox_and_removes_the_copy(gvisor, chat_server, repo,
                                                                    tmp_path, request):
    chat_server.push(reply(commands=[["python", "-c", "import time; time.sleep(600)"]]))
    # the run's own temporary folders go here (beside /tmp's others, so a sandbox can reach them)
    scratch = Path(tempfile.mkdtemp(prefix="plimsoll-test-sigterm-"))
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    scratch.chmod(0o755)
    out = tmp_path / "out"
    args = run_args(chat_server.url, repo, tasks(tmp_path, "edge-case"), out)
    proc = subprocess.Popen([sys.executable, "-m", "plimsoll_ci", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, KEY_ENV: KEY, "TMPDIR": str(scratch)})
    deadline = time.monotonic() + 60
    while not _ours(f"--root={scratch}/plimsoll-cmd-") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ours(f"--root={scratch}/plimsoll-cmd-"), proc.communicate(timeout=60)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM" in err
    assert _ours(f"{scratch}/plimsoll-") == []
    assert sorted(p.name for p in scratch.iterdir()) == []
