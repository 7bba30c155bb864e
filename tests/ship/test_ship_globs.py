"""Ship-set globs decide every path as pathspec's GitIgnoreSpec does, and a matcher built from
remembered translations never imports pathspec (a warm hook does not pay its import)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest
from pathspec import GitIgnoreSpec

from plimsoll_ci.shipscan import globs

PATTERNS = [
    "tasks/**", "lib/*.mjs", "*.mjs", "**/*.test.mjs", "a/**/b", "build/", "docs", "/top.txt",
    "seed-?.json", "seed-[0-9].json", "seed-[!0-9].json", "a*b", "[]]x", "a[/]b", "[!]]x",
    "a[]-]b", "**/foo", "foo/**", "\\*x", "*", "a?c", "[a-c]x", "priv/", "**/priv/**", "x/",
    "caf\udce9/", "**", "/", "a/", "b/**/", " lead", "trail\\ ", "trail  ", "\\!bang", "#hash",
    "\\#hash", "!neg", "!priv/keep.md", "!x/", "a/b/c", "a/*/c", "*/", "/a/**", "[", "a[",
]
PATHS = [
    "tasks/a/b.json", "tasks", "x/tasks/a", "lib/view.mjs", "lib/sub/view.mjs", "deep/down/v.mjs",
    "a.test.mjs", "x/y/a.test.mjs", "a/b", "a/x/y/b", "a/xb", "build/out.js", "build", "docs/a.md",
    "top.txt", "sub/top.txt", "seed-1.json", "seed-x.json", "]x", "ax", "a-b", "foo", "x/y/foo",
    "foo/a/b", "*x", "a/c", "bx", "dx", "priv/key.js", "priv/keep.md", "x/priv/a/b", "x", "x/y",
    "caf\udce9/\udce9t\udce9.txt", " lead", "trail ", "trail", "!bang", "#hash", "a/b/c",
    "a/z/c", "a", "b/c/d", "/top.txt", "./top.txt", "[", "a[",
]


def _pathspec(patterns: list[str], path: str) -> bool:
    return GitIgnoreSpec.from_lines(patterns, backend="simple").match_file(path)


@pytest.mark.parametrize("patterns", [[p] for p in PATTERNS] + [
    list(pair) for pair in itertools.permutations(
        ["priv/", "!priv/keep.md", "**/*.md", "!docs", "docs/**", "!x/", "x/y"], 2)])
def test_globs_decide_every_path_as_pathspecs_gitignorespec_does(patterns: list[str]) -> None:
    try:
        expected = [_pathspec(patterns, p) for p in PATHS]
    except ValueError:
        with pytest.raises(ValueError):
            globs.Globs(patterns)
        return
    assert [globs.Globs(patterns).match(p) for p in PATHS] == expected


def test_an_invalid_pattern_is_a_value_error_as_in_git() -> None:
    with pytest.raises(ValueError):
        globs.Globs(["tasks/\\"])


MATCH_REMEMBERED = """
import json, sys
from plimsoll_ci.shipscan import globs
globs.remember(json.loads(sys.argv[1]))
g = globs.Globs(["tasks/**", "priv/"])
print(json.dumps([g.match("tasks/a.md"), g.match("x/priv/k"), g.match("README.md"),
                  "pathspec" in sys.modules]))
"""


def test_a_matcher_from_remembered_translations_matches_without_importing_pathspec() -> None:
    known = globs.translations(["tasks/**", "priv/"])
    out = subprocess.run([sys.executable, "-c", MATCH_REMEMBERED, json.dumps(known)],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [True, True, False, False]


def test_translator_files_are_pathspecs_own_sources() -> None:
    files = globs.translator_files()
    assert files and all(f.is_file() for f in files)
    assert any(f.name == "_version.py" for f in files)
