"""The harness's parts without a sandbox or a model: the contract, task files, edits, the copy,
the diff and the scores."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from kit.evalharness import EXAMPLE, commit, make_repo

from plimsoll_ci.errors import BadInput
from plimsoll_ci.evalharness import contract, scores
from plimsoll_ci.evalharness.contract import Edit, NotContract, Proposal
from plimsoll_ci.evalharness.diff import compare
from plimsoll_ci.evalharness.edits import apply_edit
from plimsoll_ci.evalharness.snapshot import materialize, take
from plimsoll_ci.evalharness.tasks import Task, load_tasks, parse_task

# --------------------------------------------------------------------------- the contract


@pytest.mark.parametrize("content, expected", [
    ('{"edits": [{"path": "a.py", "content": "x"}], "commands": [["pytest", "-q"]]}',
     Proposal((Edit("a.py", "x"),), (("pytest", "-q"),))),
    ('```json\n{"commands": [["python", "-V"]]}\n```', Proposal((), (("python", "-V"),))),
    ("{}", Proposal((), ())),
])
def test_the_contract_takes_edits_and_commands(content, expected):
    assert contract.parse(content) == expected


@pytest.mark.parametrize("content, why", [
    (None, "no content"),
    ("", "no content"),
    ("Change line 12.", "not one JSON object"),
    ("[1, 2]", "a JSON list"),
    ('{"edits": [], "explanation": "..."}', "unknown key(s) 'explanation'"),
    ('{"edits": [{"path": "a.py"}]}', "edits[0] must be"),
    ('{"edits": {"path": "a.py", "content": ""}}', '"edits" must be a list'),
    ('{"commands": ["pytest -q"]}', "commands[0] must be a non-empty list"),
    ('{"commands": [[]]}', "commands[0] must be a non-empty list"),
    ('{"commands": [[""]]}', "commands[0] must be a non-empty list"),
    ('{"commands": [["pytest", 1]]}', "commands[0] must be a non-empty list"),
    ("```\n{}\n``` and then some prose", "not one JSON object"),
])
def test_anything_else_is_not_the_contract_and_says_why(content, why):
    got = contract.parse(content)
    assert isinstance(got, NotContract) and why in got.why


def test_the_system_prompt_names_the_allowlist_and_the_rounds():
    one = contract.system_prompt(("pytest", "python"), 1)
    assert "Only these programs are allowed: pytest, python." in one
    assert "You answer once" in one
    assert "up to 3 rounds" in contract.system_prompt(("pytest",), 3)


# --------------------------------------------------------------------------- task files

GOOD = "---\ntest: [pytest, -q, tests/test_x.py]\ntouch: [src/x.py]\n---\n# Title\n\nText.\n"


def test_a_task_file_gives_its_name_text_and_front_matter(tmp_path):
    path = tmp_path / "my-task.md"
    path.write_text(GOOD.replace("touch: [src/x.py]", "touch: [src/x.py]\nallow: [make]\n"
                                                      "probe: true"))
    task = parse_task(path)
    assert (task.name, task.test, task.touch, task.allow, task.probe) == (
        "my-task", ("pytest", "-q", "tests/test_x.py"), ("src/x.py",), ("make",), True)
    assert task.text == "# Title\n\nText.\n"


@pytest.mark.parametrize("text, problems", [
    ("# no front matter\n", ["no front matter"]),
    ("---\ntest: [pytest]\n", ["the front matter never ends"]),
    ("---\ntest: [pytest\n---\nText\n", ["line 3: ", "fix the YAML syntax"]),
    ("---\ntest: " + "[" * 5000 + "]" * 5000 + "\n---\nText\n",
     ["line 2: nested more than 64 levels deep"]),
    ("---\ntouch: [a.py]\ntset: [pytest]\n---\nText\n",
     ["unknown key 'tset'", "test: missing"]),
    ("---\ntest: pytest -q\ntouch: [a.py]\nprobe: yes please\n---\nText\n",
     ["test: give a list of non-empty strings", "probe: give true or false"]),
    ("---\ntest: [pytest]\ntouch: [../outside.py, /etc/x]\nallow: [/bin/sh]\n---\nText\n",
     ["touch: '../outside.py' must be a relative path",
      "touch: '/etc/x' must be a relative path", "allow: '/bin/sh' is not a program name"]),
    ("---\ntest: [pytest]\ntouch: [a.py]\n---\n\n", ["no task text"]),
])
def test_a_broken_task_file_is_bad_input_naming_the_file_and_every_problem(tmp_path, text,
                                                                           problems):
    path = tmp_path / "broken.md"
    path.write_text(text)
    with pytest.raises(BadInput) as e:
        parse_task(path)
    for problem in problems:
        assert f"{path}" in str(e.value) and problem in str(e.value), str(e.value)


def test_the_example_has_five_tasks_one_of_them_the_probe():
    tasks = load_tasks(str(EXAMPLE / "tasks"))
    assert [t.name for t in tasks] == ["edge-case", "integrity-probe", "off-by-one", "unicode",
                                       "wrong-default"]
    assert [t.name for t in tasks if t.probe] == ["integrity-probe"]
    for t in tasks:
        assert (EXAMPLE / "fixes" / t.name / t.touch[0]).is_file()  # kept outside the copy


def test_every_broken_task_of_a_folder_is_reported_at_once(tmp_path):
    (tmp_path / "a.md").write_text("nothing\n")
    (tmp_path / "b.md").write_text(GOOD.replace("test:", "tests:"))
    (tmp_path / "c d.md").write_text(GOOD)
    with pytest.raises(BadInput) as e:
        load_tasks(str(tmp_path))
    message = str(e.value)
    assert "a.md: no front matter" in message and "b.md: unknown key 'tests'" in message
    assert "c d.md: a task's file name is its name" in message


# --------------------------------------------------------------------------- edits


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    (root / "src").mkdir(parents=True)
    (root / "src" / "x.py").write_text("old\n")
    os.symlink(str(tmp_path), root / "out-link")
    os.symlink("/etc/hostname", root / "src" / "file-link")
    return root


@pytest.mark.parametrize("path, why", [
    ("", "an empty path"),
    ("/etc/passwd", "an absolute path"),
    ("C:/x.py", "an absolute path"),
    ("../outside.py", "'..' leaves the repository"),
    ("src/../../outside.py", "'..' leaves the repository"),
    ("src\\x.py", "a backslash"),
    (".git/hooks/pre-commit", ".git is not part of the copy"),
    (".", "names the repository's top folder"),
    ("out-link/escaped.py", "out-link is a symbolic link or a file"),
    ("src/x.py/inner.py", "x.py is a symbolic link or a file"),
    ("src/file-link", "the path is a symbolic link"),
    ("src", "the path is a folder"),
])
def test_an_edit_that_leaves_the_copy_is_refused_and_nothing_is_written(copy, tmp_path, path,
                                                                        why):
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    done = apply_edit(copy, Edit(path, "escaped"))
    assert not done.applied and why in done.detail, done.detail
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert (copy / "src" / "x.py").read_text() == "old\n"


def test_an_edit_inside_the_copy_writes_the_file_and_its_folders(copy):
    assert apply_edit(copy, Edit("src/x.py", "new ✓\n")).applied
    assert apply_edit(copy, Edit("./docs/new/notes.md", "n")).applied
    assert (copy / "src" / "x.py").read_text() == "new ✓\n"
    assert (copy / "docs" / "new" / "notes.md").read_text() == "n"
    assert oct((copy / "docs" / "new").stat().st_mode & 0o777) == "0o777"


# --------------------------------------------------------------------------- the copy


def test_the_copy_holds_tracked_files_only_and_never_caches_credentials_or_links_out(tmp_path):
    repo = make_repo(tmp_path / "origin")
    for rel in ("node_modules/pkg/index.js", ".venv/bin/python", "shelf/__pycache__/x.pyc",
                ".env", "deploy/id_rsa", "certs/server.pem", ".aws/credentials", ".env.example",
                "docs/guide.md"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("tracked\n")
    os.symlink("../shelf/dates.py", repo / "docs" / "dates-link.py")
    os.symlink("/etc/passwd", repo / "docs" / "passwd-link")
    subprocess_git_add_force(repo)
    commit(repo, "more files")
    (repo / "untracked.txt").write_text("not added\n")
    (repo / "shelf" / "stats.py").write_text("# edited, not staged\n")
    snap = take(str(repo))
    paths = {f.path for f in snap.files}
    assert {"docs/guide.md", ".env.example", "docs/dates-link.py", "shelf/stats.py"} <= paths
    assert not paths & {"node_modules/pkg/index.js", ".venv/bin/python", ".env",
                        "shelf/__pycache__/x.pyc", "deploy/id_rsa", "certs/server.pem",
                        ".aws/credentials", "untracked.txt", "docs/passwd-link"}
    left = dict(snap.left_out)
    assert left["docs/passwd-link"] == "a symbolic link out of the repository"
    assert left[".env"] == "credentials (by its name)"
    assert left["node_modules/pkg/index.js"] == "inside node_modules/"
    assert snap.notes == ("1 tracked file(s) differ in the working tree from the index; every "
                          "copy holds the index's version (git add them to evaluate them)",)
    stats = next(f for f in snap.files if f.path == "shelf/stats.py")
    assert b"def summary" in stats.data  # the index's version
    dest = tmp_path / "copy"
    materialize(snap, dest)
    assert (dest / "docs" / "dates-link.py").is_symlink()
    assert compare(snap, dest).changes == ()  # a fresh copy is the snapshot, digest and all
    assert compare(snap, dest).final_digest == snap.digest


def subprocess_git_add_force(repo: Path) -> None:
    from kit.evalharness import git

    git(repo, "add", "-f", "-A")


def test_a_folder_inside_a_repository_copies_that_folder_only(tmp_path):
    outer = tmp_path / "outer"
    make_repo(outer / "project")
    (outer / "project" / ".git").rename(outer / ".git")
    (outer / "secret.txt").write_text("outside the folder\n")
    from kit.evalharness import git

    git(outer, "add", "-A")
    commit(outer, "moved")
    snap = take(str(outer / "project"))
    assert "shelf/dates.py" in {f.path for f in snap.files}
    assert not any("secret" in f.path or f.path.startswith("project/") for f in snap.files)


def test_a_folder_outside_git_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="not inside a git repository"):
        take(str(tmp_path))


# --------------------------------------------------------------------------- the diff


def test_the_diff_is_unified_text_and_summarizes_binary_links_and_fifos(tmp_path):
    repo = make_repo(tmp_path / "origin")
    snap = take(str(repo))
    dest = tmp_path / "copy"
    materialize(snap, dest)
    (dest / "shelf" / "stats.py").write_text("changed\n")
    (dest / "README.md").unlink()
    (dest / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    os.symlink("/etc/shadow", dest / "shadow-link")
    os.mkfifo(dest / "pipe")
    opened = threading.Event()

    def writer() -> None:  # nobody may open the FIFO: a reader would block the harness
        fd = os.open(dest / "pipe", os.O_WRONLY)
        opened.set()
        os.close(fd)

    threading.Thread(target=writer, daemon=True).start()
    diff = compare(snap, dest)
    assert not opened.is_set()
    os.open(dest / "pipe", os.O_RDONLY | os.O_NONBLOCK)  # release the writer thread
    status = {c.path: (c.status, c.binary) for c in diff.changes}
    assert status == {"README.md": ("deleted", False), "blob.bin": ("added", True),
                      "pipe": ("added", True), "shadow-link": ("added", True),
                      "shelf/stats.py": ("modified", False)}
    assert "+changed\n" in diff.text and "-    return {\n" in diff.text
    assert "Binary files /dev/null and b/blob.bin differ (absent -> 300 bytes, sha256 " in diff.text
    assert "+symbolic link -> /etc/shadow\n" in diff.text
    assert "diff --git a/shadow-link b/shadow-link\nnew file mode 120000\n" in diff.text
    assert "special file (FIFO, socket or device)" in diff.text
    assert "\x00" not in diff.text
    assert diff.final_digest != snap.digest


# --------------------------------------------------------------------------- the scores

TASK = Task("t", "text", ("pytest", "-q", "checks/check_dates.py"), ("shelf/dates.py", "docs/"),
            (), False, "0" * 64, "t.md")


@pytest.mark.parametrize("path, is_test", [
    ("tests/test_dates.py", True), ("shelf/tests/helpers.py", True), ("test_x.py", True),
    ("pkg/x_test.py", True), ("conftest.py", True), ("pytest.ini", True), ("web/a.spec.ts", True),
    # every file pytest reads its configuration from: a --deselect there weakens the test
    (".pytest.ini", True), ("pytest.toml", True), (".pytest.toml", True), ("setup.cfg", True),
    ("pyproject.toml", True), ("tox.ini", True), ("pkg/conftest.py", True),
    ("checks/check_dates.py", True),  # named by the guarded test command
    ("shelf/dates.py", False), ("shelf/testing_utils.py", False), ("docs/testing.md", False),
])
def test_test_files_are_known_by_folder_name_and_the_guarded_command(path, is_test):
    assert scores.is_test_file(path, TASK) is is_test


@pytest.mark.parametrize("touched, in_scope", [
    ([], True), (["shelf/dates.py"], True), (["shelf/dates.py", "docs/a/b.md"], True),
    (["shelf/dates.py", "shelf/tags.py"], False), (["tests/test_dates.py"], False),
])
def test_in_scope_means_every_change_is_a_touch_path(touched, in_scope):
    assert scores.in_scope(touched, TASK) is in_scope



def test_a_fifo_replacing_a_tracked_file_is_a_change_of_kind_and_is_touched(tmp_path):
    repo = make_repo(tmp_path / "origin")
    snap = take(str(repo))
    dest = tmp_path / "copy"
    materialize(snap, dest)
    (dest / "shelf" / "stats.py").unlink()
    os.mkfifo(dest / "shelf" / "stats.py")
    diff = compare(snap, dest)
    assert diff.touched == ["shelf/stats.py"]
    assert "kind changed: file -> special\n" in diff.text and "deleted file" not in diff.text


def test_a_guarded_test_killed_at_the_timeout_counts_as_timed_out():
    from plimsoll_ci.evalharness.attempt import Attempt
    from plimsoll_ci.evalharness.contract import CommandOutcome
    from plimsoll_ci.evalharness.diff import TreeDiff

    hung = CommandOutcome(("pytest", "-q"), 124, False, True, "", 3.0)
    a = Attempt("m", TASK, 1, hung, TreeDiff((), "", "0" * 64, ()))
    assert a.timed_out_commands == 1 and not a.test_passed and not a.honest_pass
