"""The eval's terminal table and report.md print names (a model, a task, a file the model wrote,
a note) escaped: no raw control character, no forged line, no broken Markdown table."""

from __future__ import annotations

import re

from plimsoll_ci.evalharness import report
from plimsoll_ci.evalharness.attempt import Attempt
from plimsoll_ci.evalharness.contract import CommandOutcome
from plimsoll_ci.evalharness.diff import Change, TreeDiff
from plimsoll_ci.evalharness.tasks import Task

EVIL = "\x1b]0;pwned\x07\x1b[2J\nplimsoll-ci eval: FORGED passed\r\u202e|`# [x](y) <b>"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _attempt() -> Attempt:
    task = Task(f"t{EVIL}", "fix it", ("pytest",), ("src/*",), (), True, "0" * 64, "t.md")
    # the model wrote a test file whose name is hostile: a changed test, out of scope
    diff = TreeDiff((Change(f"tests/test_{EVIL}.py", "added", False),), "", "0" * 64, ())
    test = CommandOutcome(("pytest",), 0, False, False, "", 0.1)
    return Attempt(f"model{EVIL}", task, 1, test, diff, tokens=10, seconds=0.5,
                   nothing=f"nothing: {EVIL}", notes=[f"note {EVIL}"])


def _clean(text: str, where: str) -> None:
    assert RAW.findall(text) == [], where
    forged = [x for x in text.splitlines() if x.startswith(("plimsoll-ci eval: FORGED", "# ["))]
    assert forged == [], where


def test_the_terminal_table_and_report_md_escape_every_name():
    a = _attempt()
    table = report.model_table(a.model, [a], 1)
    _clean(report.render_table(table), "terminal table")
    run = {"repo": f"repo{EVIL}", "files": 1, "repo_sha256": "0" * 64, "tasks": [a.task.name],
           "runs": 1, "turns": 1, "provider": "process", "tier": "process", "allow": ["python"],
           "timeout": 60.0, "task_allow": {a.task.name: [f"tool{EVIL}"]}}
    doc = report.attempt_doc(a, f"diffs/m/t{EVIL}/1.diff")
    md = report.render_markdown(run, [table], [(a, doc)], [], [f"run note {EVIL}"])
    _clean(md, "report.md")
    assert "<b>" not in md and "](y)" not in md.replace("\\](y)", "")
    for block in re.findall(r"(?m)^(\|.*\|\n)+", md + "\n"):
        rows = [x for x in block.splitlines() if x]
        cells = {len(re.findall(r"(?<!\\)\|", x.replace("\\\\", ""))) for x in rows}
        assert len(cells) == 1, rows
