"""A commit's changes through each config's glob sets: every glob set, in the config's order,
judged on the changed paths (command sets left to their rebuild), whichever config came before."""

from __future__ import annotations

from pathlib import Path

from kit.history import GitRepo

from plimsoll_ci.git import ZERO_OID
from plimsoll_ci.gitlog import Change, Commit
from plimsoll_ci.history.judge import Delta, Judge, Shipped
from plimsoll_ci.history.records import Notes, Options
from plimsoll_ci.history.session import open_session
from plimsoll_ci.shipscan import shipconfig

GLOBS = 'ship:\n  docs:\n    include: ["docs/**"]\n  code:\n    include: ["**/*.py"]\n'
BUILT = GLOBS + '  kit:\n    command: "python3 kit.py {out}"\n'


def commit(*changes: tuple[str, str]) -> Commit:
    return Commit("1" * 40, (), "2" * 40, 0, "Ada",
                  [Change(p.encode(), "100644" if oid != ZERO_OID else "000000", oid)
                   for p, oid in changes])


def test_each_configs_glob_sets_judge_the_changed_paths(tmp_path: Path, wset_path: Path) -> None:
    from plimsoll_ci import withheld

    repo = GitRepo(tmp_path / "repo")
    session = open_session(str(repo.path), withheld.load(wset_path), Options(use_cache=False),
                           Notes())
    judge = Judge(session)
    globs, built = (shipconfig.parse_config(t, "plimsoll.yaml", repo.path) for t in (GLOBS, BUILT))
    assert (judge.builds(globs), judge.builds(built), judge.builds(globs)) == (False, True, False)
    state: dict = {}
    a, b = "a" * 40, "b" * 40
    first = judge.incremental(commit(("docs/x.py", a), ("kit.py", b)), built, state)
    assert first == [Delta("docs", "docs/x.py", Shipped(a, "docs/x.py")),
                     Delta("code", "docs/x.py", Shipped(a, "docs/x.py")),
                     Delta("code", "kit.py", Shipped(b, "kit.py"))]
    assert all(type(d) is Delta and type(d.item) is Shipped for d in first)
    again = judge.incremental(commit(("docs/x.py", a), ("kit.py", ZERO_OID)), globs, state)
    assert again == [Delta("code", "kit.py", None)]  # the same blob: no delta for docs/x.py
    assert set(state) == {("docs", "docs/x.py"), ("code", "docs/x.py")}
