"""The CLI as a user runs it: `plimsoll-ci scan`, `withheld build`, the `plimsoll-withheld` front."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
from kit.cli import run_cli
from kit.scan import SEED

from plimsoll_ci import __version__
from plimsoll_ci.cli import COMMANDS

KEY = "k3y-for-tests-only-0123456789abcdef"


@pytest.fixture
def harness(tmp_path):
    """A harness folder: the practice seeds (withheld) and a task folder that leaks one."""
    (tmp_path / "seeds.txt").write_text(f"101\n{SEED}\n# a comment\n31.5\nDrone Answer Key\n")
    task = tmp_path / "task"
    (task / "viewer").mkdir(parents=True)
    (task / "viewer" / "replay.html").write_text(
        f'<a href="tracks/seed-{SEED}.json">example replay</a>\n')
    (task / "README.md").write_text("Fly the course.\n")
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "README.md").write_text("Fly the course; seeds 13107713414 and 131.5 are fine.\n")
    return tmp_path


def build(guard, harness, *extra, name="withheld.json"):
    p = run_cli("withheld", "build", "--values", "seeds.txt", "-o", name, *extra, cwd=harness,
                guard=guard)
    assert p.returncode == 0, p.stderr
    guard.file(harness / name)
    return harness / name


def test_version_is_printed(leak, tmp_path):
    p = run_cli("--version", cwd=tmp_path, guard=leak)
    assert p.returncode == 0 and p.stdout.strip() == f"plimsoll-ci {__version__}"


AVAILABLE = [n for n, (m, _) in COMMANDS.items() if importlib.util.find_spec(m) is not None]


@pytest.mark.parametrize("command", [None, *AVAILABLE])
def test_help_works_for_every_command(leak, tmp_path, command):
    p = run_cli(*([command] if command else []), "--help", cwd=tmp_path, guard=leak)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: plimsoll-ci") and (command or "COMMAND") in p.stdout


def test_the_scan_and_withheld_commands_exist(leak):
    assert {"scan", "withheld"} <= set(AVAILABLE)


def test_a_leaking_folder_exits_1_and_names_file_place_and_entry(leak, harness):
    build(leak, harness)
    p = run_cli("scan", "--set", "withheld.json", "task", cwd=harness, guard=leak)
    assert p.returncode == 1
    assert "task/viewer/replay.html:1:" in p.stdout and "seeds.txt:2" in p.stdout


def test_a_clean_folder_exits_0(leak, harness):
    build(leak, harness)
    p = run_cli("scan", "--set", "withheld.json", "clean", cwd=harness, guard=leak)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 findings" in p.stdout


@pytest.mark.parametrize("how", [("--mode", "warn"), ()], ids=["scan --mode warn", "warn set"])
def test_warn_mode_exits_0_and_still_prints_the_findings(leak, harness, how):
    if how:
        build(leak, harness)
    else:
        build(leak, harness, "--mode", "warn")
    p = run_cli("scan", "--set", "withheld.json", "task", *how, cwd=harness, guard=leak)
    assert p.returncode == 0
    assert "seeds.txt:2" in p.stdout


@pytest.mark.parametrize("fmt", ["json", "sarif", "text", "markdown"])
def test_output_writes_the_report_atomically(leak, harness, fmt):
    build(leak, harness)
    out = harness / "reports" / f"scan.{fmt}"
    out.parent.mkdir()
    out.write_text("an older report\n" * 1000)
    inode = out.stat().st_ino
    p = run_cli("scan", "--set", "withheld.json", "task", "--format", fmt, "--output", str(out),
            cwd=harness, guard=leak)
    assert p.returncode == 1 and p.stdout == ""
    leak.file(out)
    assert out.stat().st_ino != inode  # replaced by a rename, never rewritten in place
    assert sorted(x.name for x in out.parent.iterdir()) == [out.name]  # no temp file left
    text = out.read_text()
    assert "older report" not in text and "seeds.txt:2" in text
    if fmt in ("json", "sarif"):
        json.loads(text)


def test_output_into_a_missing_folder_exits_2_naming_it(leak, harness):
    build(leak, harness)
    p = run_cli("scan", "--set", "withheld.json", "task", "-o", "nowhere/r.json", cwd=harness,
                guard=leak)
    assert p.returncode == 2 and "nowhere/r.json" in p.stderr and "Traceback" not in p.stderr


def test_the_json_report_from_the_cli_has_the_documented_shape(leak, harness):
    build(leak, harness)
    p = run_cli("scan", "--set", "withheld.json", "task", "--format", "json", cwd=harness,
                guard=leak)
    doc = json.loads(p.stdout)
    assert set(doc) == {"findings", "notes", "scanned"}
    assert doc["scanned"]["files"] == 2
    [f] = doc["findings"]
    assert (f["path"], f["line"], f["entry"], f["kind"], f["chain"]) == \
        ("task/viewer/replay.html", 1, "seeds.txt:2", "value", "")


def test_a_missing_path_exits_2_naming_it(leak, harness):
    build(leak, harness)
    p = run_cli("scan", "--set", "withheld.json", "task", "no-such-dir", cwd=harness, guard=leak)
    assert p.returncode == 2
    assert "no-such-dir" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(("content", "words"), [
    ("{not json", "not valid JSON at line 1"),
    ('{"format": "plimsoll-withheld/1", "scheme": "sha256", "entries": [{"id": "a:1", '
     '"kind": "value", "digest": "zz"}]}', "entry 1 (a:1)"),
    ('{"format": "something-else"}', "format is 'something-else'"),
    ("[]", "not a JSON object"),
], ids=["not json", "bad entry", "wrong format", "not an object"])
def test_a_malformed_set_exits_2_naming_the_file_and_the_problem(leak, harness, content, words):
    (harness / "bad.json").write_text(content)
    p = run_cli("scan", "--set", "bad.json", "task", cwd=harness, guard=leak)
    assert p.returncode == 2
    assert "bad.json" in p.stderr and words in p.stderr and "Traceback" not in p.stderr


def test_a_missing_set_file_exits_2_naming_it(leak, harness):
    p = run_cli("scan", "--set", "gone.json", "task", cwd=harness, guard=leak)
    assert p.returncode == 2 and "gone.json" in p.stderr


def test_a_keyed_set_with_the_right_key_finds_the_leak(leak, harness):
    env = {"PLIMSOLL_KEY": KEY}
    p = run_cli("withheld", "build", "--values", "seeds.txt", "--key-env", "PLIMSOLL_KEY",
            "-o", "withheld.json", cwd=harness, env=env, guard=leak)
    assert p.returncode == 0 and "brute-forced" not in p.stderr
    leak.text(p.stderr)
    set_text = (harness / "withheld.json").read_text()
    assert KEY not in set_text and '"hmac-sha256"' in set_text
    p = run_cli("scan", "--set", "withheld.json", "--key-env", "PLIMSOLL_KEY", "task",
            cwd=harness, env=env, guard=leak)
    assert p.returncode == 1 and "seeds.txt:2" in p.stdout
    assert KEY not in p.stdout + p.stderr


@pytest.mark.parametrize(("args", "env", "words"), [
    (["--key-env", "PLIMSOLL_KEY"], {"PLIMSOLL_KEY": "a-different-key"}, "wrong key"),
    ([], {}, "is keyed"),
    (["--key-env", "PLIMSOLL_UNSET_KEY"], {}, "PLIMSOLL_UNSET_KEY"),
], ids=["wrong key", "no key", "key variable unset"])
def test_a_keyed_set_without_its_key_exits_2_with_a_message(leak, harness, args, env, words):
    p = run_cli("withheld", "build", "--values", "seeds.txt", "--key-env", "PLIMSOLL_KEY",
            "-o", "withheld.json", cwd=harness, env={"PLIMSOLL_KEY": KEY}, guard=leak)
    assert p.returncode == 0
    p = run_cli("scan", "--set", "withheld.json", *args, "task", cwd=harness, env=env, guard=leak)
    assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr
    if words != "PLIMSOLL_UNSET_KEY":
        assert "withheld.json" in p.stderr
    assert KEY not in p.stderr and "a-different-key" not in p.stderr


def test_build_warns_about_guessable_unkeyed_values_without_printing_them(leak, harness):
    p = run_cli("withheld", "build", "--values", "seeds.txt", cwd=harness, guard=leak)
    assert p.returncode == 0
    assert "seeds.txt:2" in p.stderr and "brute-forced" in p.stderr
    doc = json.loads(p.stdout)
    assert [e["id"] for e in doc["entries"]] == \
        ["seeds.txt:1", "seeds.txt:2", "seeds.txt:4", "seeds.txt:5"]


def test_the_compatible_front_builds_to_stdout_and_scans(leak, harness):
    p = run_cli("build", "-mode", "refuse", "-values", "seeds.txt", cwd=harness,
                front="withheld_main", guard=leak)
    assert p.returncode == 0, p.stderr
    (harness / "withheld.json").write_text(p.stdout)
    p = run_cli("scan", "-set", "withheld.json", "task/", cwd=harness, front="withheld_main",
                guard=leak)
    assert p.returncode == 1 and "seeds.txt:2" in p.stdout
    p = run_cli("scan", "-set", "withheld.json", "clean/", cwd=harness, front="withheld_main",
                guard=leak)
    assert p.returncode == 0


def test_the_compatible_front_refuses_an_unknown_action(leak, tmp_path):
    p = run_cli("frobnicate", cwd=tmp_path, front="withheld_main", guard=leak)
    assert p.returncode == 2 and "usage: plimsoll-withheld build|scan" in p.stderr


def test_a_name_that_is_not_utf8_is_reported_on_a_strict_stdout_and_to_a_file(leak, harness):
    build(leak, harness)
    task = harness / "odd"
    task.mkdir()
    name = os.fsdecode(f"seed-{SEED}-".encode() + b"\xff.txt")
    (task / name).write_text("x")
    env = {"PYTHONIOENCODING": "utf-8"}  # errors=strict: a surrogate would crash a plain write
    p = run_cli("scan", "--set", "withheld.json", "odd", cwd=harness, env=env, guard=leak)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    p = run_cli("scan", "--set", "withheld.json", "odd", "-o", "r.txt", cwd=harness, env=env,
                guard=leak)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert b"\\xff.txt" in (harness / "r.txt").read_bytes()  # shown escaped, as on stdout



def test_a_path_given_as_file_and_source_exits_2_saying_what_to_do(leak, harness):
    (harness / "gen.py").write_text("def f(a, b):\n    return a * 3 + b // 7 - a ** 2\n" * 4)
    p = run_cli("withheld", "build", "--file", "gen.py", "--source", "gen.py", cwd=harness,
                guard=leak)
    assert p.returncode == 2
    assert "duplicate entry ids: gen.py" in p.stderr and "give each path once" in p.stderr


def test_a_source_entry_finds_a_renamed_copy_from_the_cli_with_its_overlap(leak, harness):
    body = "".join(f"def step{i}(state, dt):\n    x, v = state\n    return (x + v * dt, "
                   f"v - {i} * x * dt)\n\n" for i in range(6))
    (harness / "gen.py").write_text(body)
    (harness / "task" / "mine.py").write_text(body.replace("state", "s").replace("dt", "h"))
    p = run_cli("withheld", "build", "--source", "gen.py", "-o", "src.json", cwd=harness,
                guard=leak)
    assert p.returncode == 0, p.stderr
    p = run_cli("scan", "--set", "src.json", "task", cwd=harness, guard=leak)
    assert p.returncode == 1 and "task/mine.py" in p.stdout and "withheld source gen.py" in p.stdout
    assert "overlap 100%" in p.stdout


def test_output_onto_a_folder_exits_2_naming_it_and_leaves_no_temp_file(leak, harness):
    build(leak, harness)
    (harness / "reports").mkdir()
    p = run_cli("scan", "--set", "withheld.json", "task", "-o", "reports", cwd=harness, guard=leak)
    assert p.returncode == 2 and "output reports: cannot write" in p.stderr
    assert "Traceback" not in p.stderr
    assert not [x for x in harness.iterdir() if x.name.endswith(".tmp")]


def test_scan_without_a_set_exits_2_saying_which_option_to_give(leak, harness):
    p = run_cli("scan", "task", cwd=harness, guard=leak)
    assert p.returncode == 2 and "--withheld withheld.json" in p.stderr


def test_an_empty_values_file_is_a_warning_not_a_silent_empty_set(leak, harness):
    (harness / "none.txt").write_text("# nothing yet\n\n")
    p = run_cli("withheld", "build", "--values", "none.txt", cwd=harness, guard=leak)
    assert p.returncode == 0
    assert "values file none.txt: no values" in p.stderr
    assert json.loads(p.stdout)["entries"] == []


def test_a_values_file_that_is_not_utf8_exits_2_naming_it(leak, harness):
    (harness / "bin.txt").write_bytes(b"101\n\xff\xfe\n")
    p = run_cli("withheld", "build", "--values", "bin.txt", cwd=harness, guard=leak)
    assert p.returncode == 2 and "values file bin.txt: not UTF-8 at byte 4" in p.stderr


def test_withheld_info_lists_ids_and_kinds_without_values(leak, harness):
    build(leak, harness)
    p = run_cli("withheld", "info", "withheld.json", cwd=harness, guard=leak)
    assert p.returncode == 0
    assert "4 entries (4 value)" in p.stdout and "seeds.txt:2  value number" in p.stdout


@pytest.mark.parametrize("given", [".", "./", "./.", ".//viewer/.."])
def test_name_and_content_findings_print_their_paths_one_way(leak, harness, given):
    build(leak, harness)
    folder = harness / "task" / f"run {SEED}"
    folder.mkdir()
    (folder / "hex.txt").write_text(SEED.encode().hex() + "\n")
    p = run_cli("scan", "--set", str(harness / "withheld.json"), given, "--format", "json",
            cwd=harness / "task", guard=leak)
    paths = sorted(f["path"] for f in json.loads(p.stdout)["findings"])
    lead = "viewer/../" if "viewer" in given else ""
    assert paths == [f"{lead}run [withheld]/", f"{lead}run [withheld]/hex.txt",
                     f"{lead}viewer/replay.html"]


# --------------------------------------------------------------------------- set files


def test_entry_ids_never_carry_an_absolute_path(leak, harness, tmp_path_factory):
    private = tmp_path_factory.mktemp("home-me-secret")
    (private / "seeds.txt").write_text(f"101\n{SEED}\n")
    (private / "truth.csv").write_text("a,b\n1,2\n")
    (harness / "sub").mkdir()
    (harness / "sub" / "more.txt").write_text("202\n")
    p = run_cli("withheld", "build", "--values", str(private / "seeds.txt"), "--values",
            str(harness / "sub" / "more.txt"), "--file", str(private / "truth.csv"),
            cwd=harness, guard=leak)
    assert p.returncode == 0, p.stderr
    ids = [e["id"] for e in json.loads(p.stdout)["entries"]]
    assert ids == ["seeds.txt:1", "seeds.txt:2", "sub/more.txt:1", "truth.csv"]
    assert str(private) not in p.stdout + p.stderr and str(harness) not in p.stdout + p.stderr


def test_id_prefix_names_the_entries_of_each_values_file(leak, harness, tmp_path_factory):
    private = tmp_path_factory.mktemp("private")
    (private / "held-out.txt").write_text(f"{SEED}\n")
    p = run_cli("withheld", "build", "--values", "seeds.txt", "--id-prefix", "practice",
            "--values", str(private / "held-out.txt"), "--id-prefix", "held-out", cwd=harness, guard=leak)
    assert p.returncode == 0, p.stderr
    ids = [e["id"] for e in json.loads(p.stdout)["entries"]]
    assert ids == ["practice:1", "practice:2", "practice:4", "practice:5", "held-out:1"]
    p = run_cli("withheld", "build", "--values", "seeds.txt", "--values", "seeds.txt",
            "--id-prefix", "one", cwd=harness, guard=leak)
    assert p.returncode == 2 and "--id-prefix" in p.stderr and "once per --values" in p.stderr


def test_two_values_files_with_one_name_ask_for_an_id_prefix(leak, harness, tmp_path_factory):
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    for folder in (a, b):
        (folder / "seeds.txt").write_text("101\n")
    p = run_cli("withheld", "build", "--values", str(a / "seeds.txt"), "--values",
            str(b / "seeds.txt"), cwd=harness, guard=leak)
    assert p.returncode == 2 and "duplicate entry ids: seeds.txt:1" in p.stderr
    assert "--id-prefix" in p.stderr


def test_duplicate_ids_are_found_among_many_entries(leak, harness):
    (harness / "many.txt").write_text("".join(f"{1_000_000_000 + i}\n" for i in range(20_000)))
    p = run_cli("withheld", "build", "--values", "many.txt", "--file", "many.txt",
            "--file", "many.txt", cwd=harness, guard=leak)
    assert p.returncode == 2 and "duplicate entry ids: many.txt" in p.stderr


def _keyed(leak, harness, command="withheld"):
    p = run_cli(command, "build", "--values", "seeds.txt", "--key-env", "PLIMSOLL_KEY",
            "-o", "keyed.json", cwd=harness, env={"PLIMSOLL_KEY": KEY}, guard=leak)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("command", ["withheld", "sealed"])
def test_info_lists_a_keyed_set_without_its_key(leak, harness, command):
    _keyed(leak, harness, command)
    p = run_cli(command, "info", "keyed.json", cwd=harness, guard=leak)
    assert p.returncode == 0, p.stderr
    assert "hmac-sha256" in p.stdout and "seeds.txt:2  value number" in p.stdout
    p = run_cli(command, "info", "keyed.json", "--key-env", "K", cwd=harness,
            env={"K": "another key"}, guard=leak)
    assert p.returncode == 2 and "wrong key" in p.stderr


@pytest.mark.parametrize("command", ["withheld", "sealed"])
def test_info_prints_json(leak, harness, command):
    _keyed(leak, harness, command)
    p = run_cli(command, "info", "keyed.json", "--format", "json", cwd=harness, guard=leak)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["path"] == "keyed.json" and doc["scheme"] == "hmac-sha256"
    assert doc["format"] == ("plimsoll-withheld/1" if command == "withheld"
                             else "plimsoll-sealed/1")
    assert doc["key_id"] and doc["mode"] == "refuse" and doc["counts"] == {"value": 4}
    assert doc["entries"][1] == {"id": "seeds.txt:2", "kind": "value", "type": "number"}


DEEP = '{"format": "plimsoll-withheld/1", "entries": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.mark.parametrize("how", ["scan --withheld", "scan --set", "withheld info",
                                 "sealed info", "plimsoll-withheld scan", "tripwire"])
def test_a_set_nested_100000_deep_exits_2_naming_it(leak, harness, how):
    (harness / "deep.json").write_text(DEEP)
    args = {"scan --withheld": ["scan", "--withheld", "deep.json", "task"],
            "scan --set": ["scan", "--set", "deep.json", "task"],
            "withheld info": ["withheld", "info", "deep.json"],
            "sealed info": ["sealed", "info", "deep.json"],
            "plimsoll-withheld scan": ["scan", "-set", "deep.json", "task"],
            "tripwire": ["tripwire", "--sealed", "deep.json", "--requests", "task"]}[how]
    p = run_cli(*args, cwd=harness,
                front="withheld_main" if how.startswith("plimsoll-withheld") else "main",
                guard=leak)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and "deep.json" in p.stderr and "nested" in p.stderr


def test_a_key_given_for_an_unkeyed_set_is_said(leak, harness):
    build(leak, harness)
    p = run_cli("scan", "--withheld", "withheld.json", "--key-env", "K", "task", cwd=harness,
            env={"K": KEY}, guard=leak)
    assert p.returncode == 1
    assert "withheld.json is not keyed" in p.stderr and "key given is not used" in p.stderr
    assert KEY not in p.stderr


def test_a_set_with_no_entries_is_a_warning_in_a_scan(leak, harness):
    (harness / "empty.json").write_text(json.dumps(
        {"format": "plimsoll-withheld/1", "scheme": "sha256", "key_id": None,
         "mode": "refuse", "entries": []}))
    p = run_cli("scan", "--withheld", "empty.json", "task", cwd=harness, guard=leak)
    assert p.returncode == 0
    assert "empty.json has no entries" in p.stderr and "withholds nothing" in p.stderr


@pytest.mark.parametrize("target", ["/proc/version", "/proc/self/nope.txt"])
def test_output_into_a_special_file_system_exits_2_saying_why(leak, harness, target):
    build(leak, harness)
    p = run_cli("scan", "--withheld", "withheld.json", "task", "-o", target, cwd=harness,
                guard=leak)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"output {target}: " in p.stderr and "No such file or directory" not in p.stderr
    assert "cannot create a file in /proc" in p.stderr


def test_output_onto_a_pipe_or_device_writes_into_it_and_never_replaces_it(leak, harness):
    import stat

    build(leak, harness)
    fifo = harness / "report.fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer's open returns
    try:
        p = run_cli("scan", "--withheld", "withheld.json", "task", "-o", str(fifo),
                cwd=harness, guard=leak)
        try:
            got = os.read(fd, 1 << 16).decode()
        except BlockingIOError:
            got = ""
    finally:
        os.close(fd)
    assert p.returncode == 1, p.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the pipe, not a file renamed over it
    assert "seeds.txt:2" in got
    assert not [x for x in os.listdir(harness) if x.startswith(".report.fifo.")]


def test_many_guessable_values_are_warned_about_in_a_few_lines(leak, harness):
    (harness / "many.txt").write_text("".join(f"{1_000_000_000 + i}\n" for i in range(20)))
    p = run_cli("withheld", "build", "--values", "many.txt", cwd=harness, guard=leak)
    assert p.returncode == 0
    lines = [ln for ln in p.stderr.splitlines() if "guessable entropy" in ln]
    assert len(lines) == 6 and "many.txt:5: about 33 bits" in lines[4]
    assert "and 15 more values under 64 bits of guessable entropy" in lines[5]


def test_the_seed_lint_of_many_values_is_said_in_a_few_lines(leak, harness):
    (harness / "hunt.txt").write_text("".join(f"{1_000_000_000 + 7919 * i}\n" for i in range(40)))
    p = run_cli("withheld", "build", "--values", "hunt.txt", "--key-env", "K", cwd=harness,
            env={"K": KEY}, guard=leak)
    assert p.returncode == 0, p.stderr
    hunt = [ln for ln in p.stderr.splitlines() if ": hunt: " in ln or "the hunt rule" in ln]
    assert len(hunt) == 6, p.stderr
    assert "and 35 more values break the hunt rule" in hunt[-1]
