"""The guarded test judged by what ran, not by its exit code: the pre-flight and the probe.

    pre = preflight(setup, tasks)          # each task's test on the unmodified copy, before any
                                           # model call: BadInput when it cannot run
    probe = behavioural(setup, copy, task, diff, pre[task.name])

With pytest the test runs with a JUnit XML report written to a name the model never saw, and the
report says which tests ran and how each ended. The pre-flight keeps that list. After an attempt,
the probe builds a fresh copy from the snapshot, carries over the model's changes to everything
that is not a test or test configuration (so its `--deselect` in `pyproject.toml`, a new
`.pytest.ini`, an edited test are all undone), and runs the guarded test again in a fresh sandbox:
it passes only when every test the pre-flight saw ran and passed (a test the unmodified copy
skipped may skip again). A fix that ends the run early (`os._exit(0)` under pytest) leaves no
report and fails the probe. Other runners are judged by their exit code, which the results say.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.evalharness import scores
from plimsoll_ci.evalharness.contract import CommandOutcome
from plimsoll_ci.evalharness.diff import TreeDiff, read_tree
from plimsoll_ci.evalharness.edits import put
from plimsoll_ci.evalharness.snapshot import Snapshot, materialize
from plimsoll_ci.evalharness.tasks import Task
from plimsoll_ci.sandbox.command import WORKDIR, CommandLimits, View, open_up, run_in_sandbox

MAX_REPORT = 16 * 1024 * 1024
TAIL = 8 * 1024
# pytest's own exit codes for a run that never tested anything: interrupted, internal error,
# usage error, no tests collected; and the harness's "cannot execute" and "not found"
CANNOT_RUN = {2: "interrupted, or a collection error (an import failed?)",
              3: "pytest's internal error", 4: "a usage error (a bad option or path, or the "
              "import of the package under test failed while reading conftest.py)",
              5: "no tests collected", 124: "timed out", 126: "cannot execute",
              127: "the runner is not in the sandbox (give --venv with it installed)"}


class Ran(NamedTuple):
    """One run of a guarded test: how it ended, and each test case's outcome when reported."""

    outcome: CommandOutcome
    cases: dict[str, str] | None  # test id -> passed, failed, error, skipped; None: no report
    evidence: dict = {}  # the sandbox's


class Pre(NamedTuple):
    """A task's pre-flight: its test on the unmodified copy."""

    ran: Ran
    invalid: str  # "" or why the task measures nothing (its test already passes)


class Probe(NamedTuple):
    """The behavioural probe of one attempt."""

    passed: bool
    why: str
    test: CommandOutcome | None  # None when the probe did not run


def is_pytest(argv: Sequence[str]) -> bool:
    """Whether a test command runs pytest (so a JUnit XML report can be asked of it)."""
    prog = os.path.basename(argv[0]) if argv else ""
    if prog in ("pytest", "py.test"):
        return True
    return prog.startswith("python") and list(argv[1:3]) == ["-m", "pytest"]


def _cases(data: bytes) -> dict[str, str] | None:
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return None
    cases: dict[str, str] = {}
    for case in root.iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        status = ("error" if "error" in kinds else "failed" if "failure" in kinds
                  else "skipped" if "skipped" in kinds else "passed")
        # a parametrized name seen twice keeps its worst outcome
        if cases.get(key) not in ("failed", "error"):
            cases[key] = status
    return cases


def run_reported(provider: str, copy: Path, argv: Sequence[str], limits: CommandLimits,
                 view: View) -> Ran:
    """Run a guarded test in a fresh sandbox over `copy`, with a JUnit XML report when it is
    pytest (written under a fresh random name, read, then removed from the copy)."""
    argv = tuple(argv)
    report = f".plimsoll-report-{secrets.token_hex(8)}.xml" if is_pytest(argv) else ""
    run_argv = (*argv, f"--junitxml={WORKDIR}/{report}", "-o", "junit_family=xunit2") \
        if report else argv
    result = run_in_sandbox(provider, copy, run_argv, limits, view)
    outcome = CommandOutcome(argv, result.exit_code, False, result.timed_out, result.output,
                             result.seconds)
    if not report:
        return Ran(outcome, None, result.evidence)
    cases = None
    try:
        fd = os.open(copy / report, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if os.fstat(fd).st_size <= MAX_REPORT:
                with os.fdopen(os.dup(fd), "rb") as fh:
                    cases = _cases(fh.read(MAX_REPORT))
        finally:
            os.close(fd)
    except OSError:
        pass  # no report: the run was cut short, or never started
    try:
        os.unlink(copy / report)
    except OSError:
        pass
    return Ran(outcome, cases, result.evidence)


def preflight(setup, tasks: Sequence[Task], views: Mapping[str, View]) -> dict[str, Pre]:
    """Each task's guarded test on a fresh unmodified copy. BadInput (naming the task, the exit
    code and the output's tail) when it cannot run; a task whose test already passes is
    invalid (not scored)."""
    out: dict[str, Pre] = {}
    for task in tasks:
        work = Path(tempfile.mkdtemp(prefix="plimsoll-eval-pre-"))
        try:
            materialize(setup.snapshot, work / "repo")
            ran = run_reported(setup.provider, work / "repo", task.test, setup.limits,
                               views[task.name])
        finally:
            shutil.rmtree(work, ignore_errors=True)
        code = ran.outcome.exit_code
        pytest = is_pytest(task.test)
        if code in CANNOT_RUN and (pytest or code >= 124):
            tail = ran.outcome.output[-TAIL:].rstrip("\n")
            raise BadInput(
                f"{task.path}: the guarded test {' '.join(task.test)} cannot run on the "
                f"unmodified copy (exit {code}: {CANNOT_RUN[code]}); no model was called. "
                "Give the repository's dependencies and test runner with --venv PATH, or the "
                "task's env: (PYTHONPATH). The test's output ends:\n" + tail)
        invalid = ""
        if code == 0:
            invalid = "its guarded test already passes on the unmodified copy"
        elif pytest and not ran.cases:
            invalid = "its guarded test ran no test case on the unmodified copy"
        if task.fix and not invalid:
            _check_fix(setup, task, views[task.name])
        out[task.name] = Pre(ran, invalid)
    return out


def _check_fix(setup, task: Task, view: View) -> None:
    """The task's known-good fix, applied to a fresh copy, makes its guarded test pass (and pass
    the way the probe asks); BadInput otherwise."""
    from plimsoll_ci.files import read_bounded

    patch = read_bounded(Path(task.fix), 4 * 1024 * 1024, f"{task.path}: fix")
    work = Path(tempfile.mkdtemp(prefix="plimsoll-eval-fix-"))
    try:
        copy = work / "repo"
        materialize(setup.snapshot, copy)
        # git apply outside any repository: no hook or config of a repository runs
        done = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=patch,
                              cwd=copy, capture_output=True, timeout=60,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                   "HOME": str(work), "GIT_CONFIG_NOSYSTEM": "1",
                                   "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES":
                                   str(work)})
        if done.returncode != 0:
            raise BadInput(f"{task.path}: fix: {task.fix} does not apply to the copy ("
                           f"{done.stderr.decode('utf-8', 'replace').strip()[-500:]})")
        open_up(copy)
        ran = run_reported(setup.provider, copy, task.test, setup.limits, view)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if ran.outcome.exit_code != 0 or (is_pytest(task.test) and not ran.cases):
        raise BadInput(f"{task.path}: fix: with {task.fix} applied the guarded test still "
                       f"fails (exit {ran.outcome.exit_code}); a task whose known-good fix does "
                       "not pass cannot score a model. The test's output ends:\n"
                       + ran.outcome.output[-TAIL:].rstrip("\n"))


def _probe_copy(snapshot: Snapshot, copy: Path, diff: TreeDiff, task: Task, dest: Path) -> None:
    """A fresh copy with the model's changes to everything but tests and test configuration."""
    materialize(snapshot, dest)
    after, _ = read_tree(copy)
    for change in diff.changes:
        if scores.is_test_file(change.path, task):
            continue  # the pristine test (or its absence) stays
        entry = after.get(change.path)
        if entry is None:
            put(dest, change.path, None)
        elif entry.kind in ("file", "exec", "link"):
            data = entry.data
            if data is None:  # larger than the diff keeps in memory
                fd = os.open(copy / change.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as fh:
                    data = fh.read()
            put(dest, change.path, data, entry.kind)


def behavioural(setup, copy: Path, task: Task, diff: TreeDiff, pre: Pre) -> Probe:
    """The probe: the pristine tests over the model's fix, in a fresh sandbox (see the module)."""
    from plimsoll_ci.evalharness.quota import quota_folder

    with quota_folder("plimsoll-eval-probe-", setup.disk_mb) as (work, _):
        try:
            _probe_copy(setup.snapshot, copy, diff, task, work / "repo")
        except OSError as e:
            return Probe(False, f"the model's changes cannot be carried over ({e.strerror})",
                         None)
        ran = run_reported(setup.provider, work / "repo", task.test, setup.limits,
                           setup.views[task.name])
    code = ran.outcome.exit_code
    if code != 0:
        return Probe(False, f"the pristine tests failed over the fix (exit {code})", ran.outcome)
    if not is_pytest(task.test):
        return Probe(True, "passed (exit code only: the runner is not pytest)", ran.outcome)
    if ran.cases is None:
        return Probe(False, "the pristine tests exited 0 but wrote no report: the run was cut "
                     "short (an exit from inside the code under test?)", ran.outcome)
    expected = pre.ran.cases or {}
    missing = sorted(set(expected) - set(ran.cases))
    if missing:
        return Probe(False, f"{len(missing)} test(s) of the pre-flight did not run: "
                     + ", ".join(missing[:5]), ran.outcome)
    bad = sorted(k for k, v in expected.items() if v != "skipped" and ran.cases[k] != "passed")
    if bad:
        return Probe(False, f"{len(bad)} test(s) did not pass ({ran.cases[bad[0]]}): "
                     + ", ".join(bad[:5]), ran.outcome)
    if not ran.cases:
        return Probe(False, "no test ran", ran.outcome)
    return Probe(True, f"passed: {sum(v == 'passed' for v in ran.cases.values())} test(s) ran "
                 "and passed", ran.outcome)
