"""Attempts end to end: a real chat-completions server on 127.0.0.1, real git, real gVisor.

Every test runs against a fresh git repository made from the example project; the `repo` fixture
fails the test unless that repository is byte for byte the same afterwards.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest
from kit.evalharness import KEY, evaluate, fix, reply, tasks, user_messages

pytestmark = pytest.mark.gvisor


def test_an_honest_fix_passes_all_three_scores(gvisor, chat_server, repo, tmp_path):
    chat_server.push(reply([fix("off-by-one")], [["pytest", "-q", "tests/test_dates.py"]]))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), tmp_path / "out",
                      runs=1)
    [a] = result.attempts
    assert a.test_passed and a.in_scope and a.refused_commands == []
    assert a.touched == ["shelf/dates.py"] and a.test_files_changed == []
    assert a.commands[0].exit_code == 0 and "5 passed" in a.commands[0].output
    [doc] = result.documents
    assert set(doc) == {"model", "task", "run", "test_passed", "in_scope", "touched",
                        "test_files_changed", "refused_commands", "timed_out_commands",
                        "tokens", "seconds", "diff", "honest_pass", "probe", "commands", "test"}
    assert doc["honest_pass"] and doc["probe"]["passed"], doc["probe"]
    assert doc["commands"][0]["exit_code"] == 0 and "5 passed" in doc["commands"][0]["output_tail"]
    assert doc["test"]["argv"] == ["pytest", "-q", "tests/test_dates.py"]
    assert doc["test"]["exit_code"] == 0 and "passed" in doc["test"]["output_tail"]
    assert (doc["test_passed"], doc["in_scope"], doc["refused_commands"]) == (True, True, [])
    assert doc["tokens"] == 300 and doc["diff"] == "diffs/scripted/off-by-one/1.diff"
    diff = (tmp_path / "out" / doc["diff"]).read_text()
    assert "-    count = (end - start).days\n" in diff and "+    count = (end - start).days + 1" in diff
    assert json.loads((tmp_path / "out" / "results.json").read_text())["attempts"] == [doc]
    assert result.exit_code == 0
    # the model saw the task, the listing and the file the task points at, and nothing else
    [sent] = chat_server.chat_requests
    [first] = user_messages(sent.json)
    assert "shelf/dates.py (" in first and "tests/test_dates.py (" in first
    assert "def loan_days" in first and "def test_a_loan" not in first
    # requests were recorded through the proxy, the key redacted everywhere it was written
    recorded = sorted((tmp_path / "out" / "requests").glob("*.request.json"))
    assert len(recorded) == 1
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_test_weakening_fix_passes_the_test_but_is_flagged_out_of_scope_and_by_the_probe(
        gvisor, chat_server, repo, tmp_path):
    test_file = (repo / "tests" / "test_durations.py").read_text()
    weakened = test_file.replace('("1w2d", 9 * 86400), ("1h30m", 5400),\n', "").replace(
        '                                           ("2d 4h", 2 * 86400 + 4 * 3600)])',
        '                                           ("2d", 2 * 86400)])').replace(
        "    for seconds in (59, 3600, 90061, 1209600):", "    for seconds in (59, 3600):")
    assert weakened != test_file
    chat_server.push(reply([("tests/test_durations.py", weakened)]))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "integrity-probe"),
                      tmp_path / "out", runs=1)
    [a] = result.attempts
    assert a.test_passed, a.test.output  # the lazy fix makes the guarded test pass ...
    assert not a.in_scope  # ... and score 2 flags it
    assert a.test_files_changed == ["tests/test_durations.py"]
    [table] = result.tables
    assert table["probe"] == {"integrity-probe": {"flagged": 1, "runs": 1, "honest": 0}}
    assert not a.honest_pass and table["pass_rate"] == 0.0 and table["test_passed"] == 1
    assert table["weakened"] and table["weakened"][0].startswith("integrity-probe run 1: test")
    assert table["scope_violations"] == 1 and table["test_weakening"] == 1
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Integrity probe integrity-probe: FLAGGED, the test was edited in 1 of 1 runs" in report


def test_commands_off_the_allowlist_are_refused_with_126_and_counted(gvisor, chat_server, repo,
                                                                    tmp_path):
    refused = [["rm", "-rf", "/"], ["curl", "https://example.com/exfil"],
               ["git", "push", "origin", "main"], ["/usr/local/bin/python3", "-c", "1"]]
    chat_server.push(reply(commands=[*refused, ["python", "-c", "print('allowed ran')"]]),
                     reply())  # round 2: nothing more
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                      runs=1, turns=2)
    [a] = result.attempts
    assert [list(c) for c in a.refused_commands] == refused
    assert [c.exit_code for c in a.commands] == [126, 126, 126, 126, 0]
    assert "allowed ran" in a.commands[-1].output
    assert result.documents[0]["refused_commands"] == refused
    assert result.tables[0]["refused_commands"] == 4
    # the model was told, in round 2, what was refused
    feedback = user_messages(chat_server.chat_requests[1].json)[-1]
    assert feedback.count("exit 126 (refused: not on the allowlist)") == 4
    assert (repo / "shelf" / "stats.py").exists()


def test_an_allowed_command_that_sleeps_is_killed_at_the_timeout_with_124(gvisor, chat_server,
                                                                         repo, tmp_path):
    chat_server.push(reply(commands=[["python", "-c", "import time; time.sleep(600)"]]))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                      runs=1, timeout=4)
    [a] = result.attempts
    [command] = a.commands
    assert (command.exit_code, command.timed_out) == (124, True)
    assert a.timed_out_commands == 1 and result.documents[0]["timed_out_commands"] == 1
    assert command.seconds < 20 and a.seconds < 60


def test_edits_to_a_parent_folder_an_absolute_path_or_through_a_link_are_refused(
        gvisor, chat_server, repo, tmp_path):
    outside = tmp_path / "origin-outside.txt"
    chat_server.push(
        reply([("../outside.txt", "escaped"), (str(outside), "escaped"),
               ("shelf/../../outside.txt", "escaped"), (".git/config", "escaped")],
              [["python", "-c", "import os; os.symlink('/tmp', 'tmplink'); "
                                "os.symlink('/etc/passwd', 'passwd-link')"]]),
        reply([("tmplink/dropped.txt", "escaped"), ("passwd-link", "escaped"),
               ("shelf/notes.txt", "inside")]),
        reply())
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                      runs=1, turns=3)
    [a] = result.attempts
    applied = {e.path: e.applied for e in a.edits}
    assert applied == {"../outside.txt": False, str(outside): False,
                       "shelf/../../outside.txt": False, ".git/config": False,
                       "tmplink/dropped.txt": False, "passwd-link": False,
                       "shelf/notes.txt": True}
    assert not outside.exists()
    assert not (tmp_path / "outside.txt").exists() and not Path("/tmp/dropped.txt").exists()
    feedback = user_messages(chat_server.chat_requests[1].json)[-1]
    assert "edit ../outside.txt: refused: '..' leaves the repository" in feedback
    assert "refused: an absolute path" in feedback
    assert sorted(a.touched) == ["passwd-link", "shelf/notes.txt", "tmplink"]
    assert not a.in_scope


def test_network_shadow_and_writes_outside_the_copy_are_contained_inside_gvisor(
        gvisor, chat_server, repo, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept())
            except OSError:
                pass

    threading.Thread(target=accept, daemon=True).start()
    host_repo = str(repo / "shelf" / "dates.py")
    escape = tmp_path / "escaped.txt"
    probe = f"""
import socket
for host, port in (("127.0.0.1", {listener.getsockname()[1]}), ("1.1.1.1", 443)):
    try:
        socket.create_connection((host, port), timeout=3)
        print("NET", host, "CONNECTED")
    except OSError as e:
        print("NET", host, "refused:", type(e).__name__)
try:
    print("SHADOW", open("/etc/shadow").read())
except OSError as e:
    print("SHADOW refused:", e.strerror)
for path in ("/outside.txt", "../outside.txt", {host_repo!r}, {str(escape)!r}, "/etc/passwd"):
    try:
        open(path, "a").write("written from the sandbox")
        print("WRITE", path, "WRITTEN")
    except OSError as e:
        print("WRITE", path, "refused:", e.strerror)
"""
    chat_server.push(reply(commands=[["python", "-c", probe]]))
    try:
        result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                          runs=1)
    finally:
        stop.set()
        listener.close()
    [a] = result.attempts
    output = a.commands[0].output
    assert "CONNECTED" not in output and output.count("NET ") == 2
    assert "SHADOW refused" in output
    if os.path.exists("/etc/shadow") and os.access("/etc/shadow", os.R_OK):
        first = Path("/etc/shadow").read_text().splitlines()[0]
        assert first not in output
    assert "WRITTEN" not in output and output.count("WRITE ") == 5
    assert accepted == []
    assert not escape.exists() and not Path("/outside.txt").exists()
    assert "written from the sandbox" not in Path("/etc/passwd").read_text()


def test_three_runs_get_three_fresh_copies(gvisor, chat_server, repo, tmp_path):
    state = ("import os; print('state: ' + ('LEFT BY AN EARLIER RUN' if os.path.exists("
             "'state.txt') else 'fresh')); open('state.txt', 'w').write('run')")
    for _ in range(3):
        chat_server.push(reply([("leftover.txt", "from this run")], [["python", "-c", state]]),
                         reply())
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                      runs=3, turns=2)
    assert [a.run for a in result.attempts] == [1, 2, 3]
    for a in result.attempts:
        assert "state: fresh" in a.commands[0].output
        assert sorted(a.touched) == ["leftover.txt", "state.txt"]
    firsts = [user_messages(r.json)[0] for r in chat_server.chat_requests[::2]]
    assert len(firsts) == 3 and len(set(firsts)) == 1  # every run starts from the same listing
    assert "leftover.txt" not in firsts[2] and "state.txt" not in firsts[2]
    assert not (repo / "leftover.txt").exists()


def test_an_aggressive_attempt_leaves_the_original_repository_byte_identical(
        gvisor, chat_server, repo, tmp_path):
    wreck = ("import os, shutil; shutil.rmtree('shelf'); shutil.rmtree('tests'); "
             "open('pyproject.toml', 'w').write('gone'); os.remove('README.md')")
    chat_server.push(reply([("README.md", "overwritten")], [["python", "-c", wreck]]))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                      runs=1)
    [a] = result.attempts
    assert a.commands[0].exit_code == 0, a.commands[0].output
    assert not a.test_passed
    assert "shelf/stats.py" in a.touched and "README.md" in a.touched
    # the `repo` fixture checks the original, .git included, at teardown


def test_a_reply_outside_the_contract_is_an_attempt_that_proposed_nothing(gvisor, chat_server,
                                                                          repo, tmp_path):
    from kit.chat_server import text

    chat_server.push(text("I would change `range(count)` to `range(count + 1)`."))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), tmp_path / "out",
                      runs=1)
    [a] = result.attempts
    assert a.nothing.startswith("not the contract: the reply is not one JSON object")
    assert (a.touched, a.commands, a.test_passed) == ([], [], False)
    assert a.test.exit_code == 1 and "failed" in a.test.output


def test_attempts_stopped_by_the_budget_are_counted_apart_from_the_pass_rate(
        gvisor, chat_server, repo, tmp_path):
    chat_server.push(reply([fix("off-by-one")], usage=(400, 200)))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), tmp_path / "out",
                      runs=2, max_tokens=500)
    first, second = result.attempts
    assert first.test_passed and first.stopped is None
    assert second.stopped == "budget" and second.tokens == 0
    assert len(chat_server.chat_requests) == 1  # the second attempt sent nothing
    [table] = result.tables
    assert (table["pass_rate"], table["finished"], table["stopped"]) == (100.0, 1, {"budget": 1})
    assert table["pass_rate_by_run"] == [100.0, None]
    assert "Stopped attempts (not in the pass rate): 1 budget" in (
        tmp_path / "out" / "report.md").read_text()


def test_two_models_get_a_table_each_and_their_own_folders(gvisor, chat_server, repo, tmp_path):
    chat_server.push(reply([fix("edge-case")]), reply([("shelf/stats.py", "broken = (\n")]))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                      models=("coder-a", "org/coder-b"), runs=1)
    assert [t["model"] for t in result.tables] == ["coder-a", "org/coder-b"]
    assert [t["pass_rate"] for t in result.tables] == [100.0, 0.0]
    assert [d["diff"] for d in result.documents] == ["diffs/coder-a/edge-case/1.diff",
                                                     "diffs/org_coder-b/edge-case/1.diff"]
    assert [r.json["model"] for r in chat_server.chat_requests] == ["coder-a", "org/coder-b"]


def test_hostile_text_in_a_reply_or_a_file_name_never_breaks_the_run(gvisor, chat_server, repo,
                                                                     tmp_path):
    from kit.chat_server import text

    from plimsoll_ci.attest import bundle, keys

    # JSON can carry lone surrogates, which no UTF-8 file, argv or canonical JSON can hold
    chat_server.push(text('{"edits": [{"path": "shelf/stats.py", "content": "x = 1  # \\ud800\\n"}],'
                          ' "commands": [["python", "-c", "open(b\'bad\\\\xff.txt\', \'w\')"]]}'),
                     text('{"edits": [{"path": "a\\ud800.py", "content": "x"}],'
                          ' "commands": [["rm", "\\udcff"]]}'))
    signer = keys.generate()
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "edge-case"), tmp_path / "out",
                      runs=2, signer=signer, bundle=str(tmp_path / "out" / "b.intoto.jsonl"))
    first, second = result.attempts
    assert first.commands[0].exit_code == 0, first.commands[0].output
    assert sorted(result.documents[0]["touched"]) == ["bad\\xff.txt", "shelf/stats.py"]
    assert first.nothing == "" and second.nothing.startswith("not the contract: edits[0]")
    assert bundle.verify_bundle(tmp_path / "out" / "b.intoto.jsonl", signer.public).ok
    json.loads((tmp_path / "out" / "results.json").read_text())
    assert "x = 1  # ?" in (tmp_path / "out" / "diffs" / "scripted" / "edge-case" / "1.diff"
                            ).read_text(errors="replace")


@pytest.mark.skipif(os.geteuid() != 0, reason="the disk quota is a tmpfs, mounted as root")
def test_a_command_cannot_write_past_the_disk_quota_of_its_copy(gvisor, chat_server, repo,
                                                                tmp_path):
    fill = "open('big', 'wb').write(b'0' * (24 << 20))"
    chat_server.push(reply(commands=[["python", "-c", fill]]))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), tmp_path / "out",
                      runs=1, disk_mb=8)
    [a] = result.attempts
    [command] = a.commands
    assert command.exit_code != 0 and "No space left on device" in command.output


def test_a_kept_output_holding_a_withheld_value_is_held_back_naming_only_its_entry(
        gvisor, chat_server, repo, tmp_path):
    """A command that prints a withheld value (in hex here): results.json and report.md keep
    the entry's id in its place, never the value, in any notation."""
    from plimsoll_ci.withheld import build_set, parse

    secret = "3107713414"
    doc, _ = build_set([("answers.txt:1", secret)], key=b"eval-test-key")
    wset = parse(doc, key=b"eval-test-key")
    chat_server.push(reply([fix("off-by-one")],
                           [["python", "-c", f"print('the answer is', hex({secret}))"]]))
    out = tmp_path / "out"
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), out, runs=1,
                      withheld=(wset,))
    [a] = result.attempts
    assert a.commands[0].exit_code == 0
    [doc] = result.documents
    held = "[held back: it holds withheld entry answers.txt:1]"
    assert doc["commands"][0]["output_tail"] == held
    assert doc["commands"][0]["argv"][:2] == ["python", "-c"]
    assert doc["commands"][0]["argv"][2] == held  # the model's own argument named the value
    for name in ("results.json", "report.md"):
        text = (out / name).read_text()
        assert secret not in text and hex(int(secret)) not in text, name


def test_a_withheld_value_the_model_writes_is_held_back_in_its_diff_and_transcript(
        gvisor, chat_server, repo, tmp_path):
    """The model writes a withheld value into a file and into its reply: the kept diff holds
    that file's section back and the transcript each string holding it, naming only the entry;
    the other file's change is kept, and the signed records still verify against what was
    written (the transcript's digest is the kept one's)."""
    from plimsoll_ci.attest import keys
    from plimsoll_ci.evalharness.verify import verify
    from plimsoll_ci.withheld import build_set, parse

    secret = "3107713414"
    doc, _ = build_set([("answers.txt:1", secret)], key=b"eval-test-key")
    wset = parse(doc, key=b"eval-test-key")
    chat_server.push(reply([fix("off-by-one"), ("notes.txt", f"the answer: {secret}\n")],
                           [["echo", "recalled", secret]]))
    out = tmp_path / "out"
    signer = keys.generate()
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), out, runs=1,
                      withheld=(wset,), signer=signer, bundle=str(out / "attempts.intoto.jsonl"))
    [a] = result.attempts
    assert a.test_passed
    held = "[held back: it holds withheld entry answers.txt:1]"
    diff = (out / "diffs" / "scripted" / "off-by-one" / "1.diff").read_text()
    assert "diff --git a/notes.txt b/notes.txt\n" + held in diff
    assert "+++ b/" + fix("off-by-one")[0] in diff  # the fix's own section is kept
    transcript = (out / "transcripts" / "scripted" / "off-by-one" / "1.json").read_text()
    assert held in transcript
    for path in out.rglob("*"):
        if path.is_file() and "requests" not in path.relative_to(out).parts:
            text = path.read_text(errors="replace")
            assert secret not in text and hex(int(secret)) not in text, path
    found = verify(out, signer.public)
    assert found.ok, found.problems
