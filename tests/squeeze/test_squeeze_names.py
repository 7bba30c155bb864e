"""Names from a job (a rebuild folder, a recipe file, a loop name, any YAML string) reach the
terminal, the progress lines, report.md and `squeeze verify` escaped: no raw control character,
no forged log line, no broken Markdown table."""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.squeeze import HONEST

from plimsoll_ci.cli import main
from plimsoll_ci.squeeze import progress

# a window title, a cleared screen, a line that forges a verdict, a carriage return, a bidi
# override, and Markdown that would break a table or open a code span
EVIL = ("\x1b]0;pwned\x07\x1b[2J\nplimsoll-ci squeeze: [9of9] FORGED LINE verified\r"
        "\u202e|`# x\x9b31m")
FORGED = "plimsoll-ci squeeze: [9of9] FORGED"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def hostile_job(folder: Path) -> Path:
    """The smallest job (easy course, 4 fresh flights, one loop, one rebuild) whose rebuild
    folder, recipe file name and recipe text carry `EVIL`."""
    (folder / "recipes").mkdir(parents=True)
    (folder / "loop.py").write_text(HONEST)
    rebuild = folder / "rebuilds" / f"d{EVIL}"
    rebuild.mkdir(parents=True)
    (rebuild / "controller.py").write_text(HONEST)
    recipe = f"recipes/r{EVIL}.txt"
    (folder / recipe).write_text("fly \x1b[31mlow\x1b[0m\n# FORGED heading |a|b|")
    # a JSON string is a YAML double-quoted string: the escapes reach the job as characters
    (folder / "squeeze.yaml").write_text(
        "course: easy\nfresh: {count: 4}\nloops:\n  solo:\n    controller: loop.py\n"
        f"    recipe: {json.dumps(recipe)}\n    rebuilds: [rebuilds/d*/]\n")
    return folder / "squeeze.yaml"


def squeeze(*args: str) -> subprocess.CompletedProcess:
    # a real process: every byte any part of the run (workers included) writes is seen
    return run_process("squeeze", *args, timeout=300)


def assert_clean(text: str, where: str) -> None:
    raw = sorted({hex(ord(c)) for c in RAW.findall(text)})
    assert raw == [], f"{where}: raw control characters {raw}"
    forged = [line for line in text.splitlines()
              if line.startswith(FORGED) or line.startswith("# FORGED")]
    assert forged == [], f"{where}: forged lines {forged}"


def test_hostile_names_reach_no_terminal_log_or_report_raw(tmp_path):
    job = hostile_job(tmp_path / "job")
    out = tmp_path / "out"
    r = squeeze("run", str(job), "--out", str(out), "--provider", "process")
    assert r.returncode == 0, r.stderr
    assert_clean(r.stdout, "stdout")
    assert_clean(r.stderr, "stderr")
    assert "FORGED LINE verified" in r.stderr  # the name is there, escaped: \x0a, \x1b
    assert "rebuilds/d\\x1b]0;pwned\\x07\\x1b[2J\\x0aplimsoll-ci squeeze" in r.stderr
    report = (out / "report.md").read_text()
    assert_clean(report, "report.md")
    # every row of a table has its header's cells: no name added a `|` or opened a code span
    for block in re.findall(r"(?m)^(\|.*\|\n)+", report + "\n"):
        rows = [x for x in block.splitlines() if x]
        cells = {len(re.findall(r"(?<!\\)\|", x.replace("\\\\", ""))) for x in rows}
        assert len(cells) == 1, rows
    assert "\\`" in report and "\\|" in report  # the backtick and the pipe, escaped
    v = squeeze("verify", str(out), "--pub", str(out / "harness.pub"))
    assert v.returncode == 0, v.stdout + v.stderr
    assert_clean(v.stdout + v.stderr, "squeeze verify")


HOSTILE_YAML = [
    ("a loop name", f"loops:\n  {json.dumps('solo' + EVIL)}:\n    controller: loop.py\n"
                    "    rebuilds: [rebuilds/*.py]\n"),
    ("a recipe path", "loops:\n  solo:\n    controller: loop.py\n"
                      f"    recipe: {json.dumps('recipes/' + EVIL)}\n    rebuilds: [rebuilds/*.py]\n"),
    ("a rebuild glob", "loops:\n  solo:\n    controller: loop.py\n"
                       f"    rebuilds: [{json.dumps('rebuilds/' + EVIL + '*.py')}]\n"),
    ("a controller path", f"loops:\n  solo:\n    controller: {json.dumps(EVIL + '.py')}\n"
                          "    rebuilds: [rebuilds/*.py]\n"),
]


@pytest.mark.parametrize("what, line", HOSTILE_YAML, ids=[h[0] for h in HOSTILE_YAML])
def test_a_job_error_naming_a_hostile_yaml_string_is_one_escaped_line(tmp_path, capsys, what,
                                                                      line):
    (tmp_path / "rebuilds").mkdir()
    (tmp_path / "loop.py").write_text(HONEST)
    (tmp_path / "rebuilds" / "r1.py").write_text(HONEST)
    (tmp_path / "squeeze.yaml").write_text("course: easy\nfresh: {count: 4}\n" + line)
    code = main(["squeeze", "run", str(tmp_path / "squeeze.yaml"), "--out",
                 str(tmp_path / "out"), "--provider", "process"])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert_clean(out + err, what)
    assert err.count("\n") == 1 and err.startswith("plimsoll-ci: error: "), err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_on_a_terminal_shows_a_hostile_label_escaped_and_reads_no_markup_in_it():
    tty = _Terminal()
    bar = progress.make(tty)
    assert isinstance(bar, progress.Bar)
    label = f"solo/rebuild rebuilds/d{EVIL}[bold red]x[/]"
    bar.start(1, f"grading 1 controller {EVIL}")
    bar.began(label)  # shown in the bar's description while it runs
    bar.finished(label, "practice 16/16, fresh 4/4")
    bar.note(f"note {EVIL}")
    bar.close()
    text = tty.getvalue()
    # the bar draws with its own escapes; none of the name's reaches the terminal
    for raw in ("\x1b]0;pwned", "\x07", "\x1b[2J", "\u202e", "\x9b", "\r\u202e"):
        assert raw not in text
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x0aplimsoll-ci squeeze" in text
    assert "[bold red]x[/]" in text  # printed as written, not read as markup
    assert not [x for x in text.splitlines() if x.startswith(FORGED)]
