"""The pre-flight refuses, before any model call, a guarded test that cannot run on the
unmodified copy: each way pytest (or the sandbox) says so is exit 2 of `eval run`, with the
test's exit code and output tail, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.evalharness import commit, evaluate, make_repo, tasks

from plimsoll_ci.errors import BadInput

pytestmark = pytest.mark.gvisor

TASK = """---
test: {test}
touch: [shelf/dates.py]
---
# A loan returned the day it was taken out has no days
"""

CASES = {
    # a test file that does not parse: pytest's collection error, exit 2
    "collection error": ("[pytest, -q, tests/test_broken.py]", 2),
    # a test file that is not there: pytest's usage error, exit 4
    "no such test file": ("[pytest, -q, tests/test_nowhere.py]", 4),
    # a selection that matches nothing: no tests ran, exit 5
    "nothing selected": ("[pytest, -q, tests/test_dates.py, -k, no_such_test_name]", 5),
    # a runner the sandbox does not carry: exit 127
    "runner missing": ("[cargo, test]", 127),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_pre_flight_refuses_a_guarded_test_that_cannot_run(gvisor, chat_server,
                                                               tmp_path: Path, case: str) -> None:
    test, code = CASES[case]
    repo = make_repo(tmp_path / "origin")
    (repo / "tests" / "test_broken.py").write_text("def test_(:\n    pass\n")
    commit(repo, "a broken test file")
    folder = tasks(tmp_path, extra={"dates": TASK.format(test=test)})
    out = tmp_path / "out"
    with pytest.raises(BadInput) as e:
        evaluate(chat_server.url, repo, folder, out, runs=1,
                 allow=("pytest", "python", "cargo"))
    assert f"cannot run on the unmodified copy (exit {code}" in str(e.value), str(e.value)
    assert chat_server.chat_requests == [] and not out.exists()
