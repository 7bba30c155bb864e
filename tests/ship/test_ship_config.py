"""plimsoll.yaml: what it accepts, and errors that name the file, the line and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from plimsoll_ci.errors import ConfigError
from plimsoll_ci.shipscan import ship

GOOD = """\
withheld: secrets/withheld.json
key: {env: PLIMSOLL_WITHHELD_KEY}
mode: warn
limits: {max_file_bytes: 1000000, decode_seconds: 5}
ship:
  drone:
    command: python loop/kit.py {out}
    inputs: ["loop/**"]
    timeout: 60
  viewer:
    include: ["tasks/**", "lib/*.mjs"]
    exclude: ["**/*.test.mjs"]
  docs:
    root: site
    include: ["**/*.html"]
"""


def test_config_reads_sets_key_mode_and_limits(tmp_path: Path) -> None:
    cfg = ship.parse_config(GOOD, "plimsoll.yaml", tmp_path)
    assert cfg.withheld == (tmp_path / "secrets/withheld.json").resolve()
    assert cfg.key_env == "PLIMSOLL_WITHHELD_KEY" and cfg.key_file is None
    assert cfg.mode == "warn"
    assert cfg.limits == {"max_file_bytes": 1000000, "decode_seconds": 5}
    assert list(cfg.ship) == ["drone", "viewer", "docs"]
    drone, viewer, docs = cfg.ship.values()
    assert drone.command == "python loop/kit.py {out}" and drone.inputs == ("loop/**",)
    assert drone.timeout == 60
    assert viewer.include == ("tasks/**", "lib/*.mjs") and viewer.exclude == ("**/*.test.mjs",)
    assert docs.root == "site"


BAD = [
    # (yaml, line, words the message must contain)
    ("ship:\n  viewer:\n    include: tasks/**\n", 3, "ship.viewer.include must be a list of globs"),
    ("withheld: w.json\nship:\n  v:\n    include: [a]\n    exclued: [b]\n", 5,
     "unknown key 'exclued'"),
    ("ship:\n  drone:\n    command: python kit.py out\n", 3, "must contain {out}"),
    ("ship:\n  v:\n    exclude: [a]\n", 2, "needs include"),
    ("ship: [a, b]\n", 1, "ship must be a mapping"),
    ("mode: block\n", 1, "mode must be refuse or warn"),
    ("key: {env: 'abc def'}\n", 1, "environment variable name"),
    ("key: {vault: x}\n", 1, "key must be {env: VARIABLE} or {file: PATH}"),
    ("limits: {max_file_bytes: -1}\n", 1, "limits.max_file_bytes must be a positive number"),
    ("ship:\n  v:\n    include: [a]\n  v:\n    include: [b]\n", 4, "duplicate key 'v'"),
    ("ship:\n  v:\n    include: [a\n", 4, "fix the YAML syntax"),
    ("ship:\n  v:\n    include: ['!a']\n", 3, "negated pattern"),
    ("ship:\n  v:\n    include: [a]\n    root: ../up\n", 4, "root must be a relative folder"),
    ("ship:\n  'bad name':\n    include: [a]\n", 2, "must be letters, digits"),
    ("withhld: w.json\n", 1, "unknown key 'withhld'"),
    ("- a\n- b\n", 1, "the top level must be a mapping"),
]


@pytest.mark.parametrize("text, line, words", BAD)
def test_config_errors_name_the_file_the_line_and_the_problem(tmp_path: Path, text: str,
                                                               line: int, words: str) -> None:
    with pytest.raises(ConfigError) as e:
        ship.parse_config(text, "plimsoll.yaml", tmp_path)
    assert str(e.value).startswith(f"plimsoll.yaml line {line}: "), str(e.value)
    assert words in str(e.value)
    assert e.value.exit_code == 2


def test_a_key_file_inside_the_repository_is_refused(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(ConfigError, match="keep the key outside it"):
        ship.parse_config("key: {file: .plimsoll-key}\n", "plimsoll.yaml", tmp_path)
    outside = tmp_path.parent / "key-outside"
    cfg = ship.parse_config(f"key: {{file: {outside}}}\n", "plimsoll.yaml", tmp_path)
    assert cfg.key_file == outside.resolve()


def test_config_is_found_at_the_repository_root_from_a_subfolder(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a/b").mkdir(parents=True)
    assert ship.find_config(tmp_path / "a/b") is None
    (tmp_path / "plimsoll.yaml").write_text("ship: {v: {include: [x]}}\n")
    (tmp_path / "a/plimsoll.yaml").write_text("ship: {w: {include: [x]}}\n")
    assert ship.find_config(tmp_path / "a/b") == (tmp_path / "plimsoll.yaml").resolve()


def test_cli_prints_a_config_error_once_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "plimsoll.yaml").write_text("ship:\n  viewer:\n    include: tasks/**\n")
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci.cli", "ship", "list", "--config",
                        "plimsoll.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.count("ship.viewer.include must be a list of globs") == 1
    assert "line 3" in r.stderr


GLOBS = [
    # (pattern, path, ships?)
    ("tasks/**", "tasks/a/b.json", True),
    ("tasks/**", "tasks", False),
    ("tasks/**", "x/tasks/a", False),
    ("lib/*.mjs", "lib/view.mjs", True),
    ("lib/*.mjs", "lib/sub/view.mjs", False),
    ("*.mjs", "deep/down/view.mjs", True),  # no slash: any depth, as in .gitignore
    ("**/*.test.mjs", "a.test.mjs", True),
    ("**/*.test.mjs", "x/y/a.test.mjs", True),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("build/", "build/out.js", True),  # a folder pattern ships what is under it
    ("build/", "build", False),
    ("docs", "docs/a/b.md", True),
    ("/top.txt", "top.txt", True),
    ("/top.txt", "sub/top.txt", False),
    ("seed-?.json", "seed-1.json", True),
    ("seed-[0-9].json", "seed-x.json", False),
    ("seed-[!0-9].json", "seed-x.json", True),
    ("a*b", "a/b", False),
    # git's own wildmatch cases (t/t3070-wildmatch.sh) that a hand-made translator got wrong
    ("[]]x", "]x", True),  # a `]` first in a bracket is a member, not its end
    ("a[/]b", "a/b", False),  # a bracket never matches a slash
    ("[!]]x", "ax", True),
    ("[!]]x", "]x", False),
    ("a[]-]b", "a-b", True),
    ("**/foo", "foo", True),
    ("**/foo", "x/y/foo", True),
    ("foo/**", "foo/a/b", True),
    ("a/**/b", "a/xb", False),
    ("\\*x", "*x", True),
    ("\\*x", "ax", False),
    ("*", "a/b", True),  # no slash: matches the folder `a`, so all below it
    ("a?c", "a/c", False),
    ("[a-c]x", "bx", True),
    ("[a-c]x", "dx", False),
]


@pytest.mark.parametrize("pattern", ["[]]x", "a[/]b", "[!]]x", "[", "a["])
def test_a_valid_gitignore_glob_is_accepted_in_the_config(tmp_path: Path, pattern: str) -> None:
    text = f"withheld: w.json\nship:\n  v:\n    include: [{pattern!r}]\n"
    cfg = ship.parse_config(text.replace("'", '"'), "plimsoll.yaml", tmp_path)
    assert cfg.ship["v"].include == (pattern,)


@pytest.mark.parametrize("pattern, path, ships", GLOBS)
def test_globs_select_as_gitignore_does(pattern: str, path: str, ships: bool) -> None:
    s = ship.ShipSet("t", include=(pattern,))
    assert (ship.select([path], s) == [path]) is ships


def test_globs_select_paths_that_are_not_utf8_whichever_regex_engine_is_installed() -> None:
    # pathspec picks Hyperscan or RE2 by itself when either is importable; they encode each
    # path as strict UTF-8, and a repository's latin-1 name (kept as surrogate escapes) stopped
    # `history` with a UnicodeEncodeError. CI installs `hyperscan` (a test extra), so this runs
    # with it there.
    import os

    if os.environ.get("CI") != "true":
        pytest.importorskip("hyperscan", reason="pathspec's Hyperscan backend needs `hyperscan`")
    name = b"tasks/caf\xe9/\xe9t\xe9.txt".decode("utf-8", "surrogateescape")
    s = ship.ShipSet("t", include=("tasks/**",), exclude=("**/*.md",))
    assert ship.select([name, "tasks/a.md", "README.md"], s) == [name]


def test_exclude_wins_over_include_and_order_is_kept() -> None:
    s = ship.ShipSet("t", include=("lib/**", "tasks/**"), exclude=("**/*.test.mjs", "lib/priv/"))
    paths = ["tasks/t.md", "lib/a.mjs", "lib/a.test.mjs", "lib/priv/key.js", "README.md"]
    assert ship.select(paths, s) == ["tasks/t.md", "lib/a.mjs"]


@pytest.mark.parametrize("prefix, root, expected", [
    ("", "", [("viewer/a.html", "viewer/a.html")]),
    ("", "site", [("site/viewer/b.html", "viewer/b.html")]),
    ("harness/", "site", [("harness/site/viewer/c.html", "viewer/c.html")]),
    ("harness/", "", []),  # globs apply from the config's folder, never above it
])
def test_repository_paths_ship_from_the_config_folder_and_the_sets_root(
        prefix: str, root: str, expected: list[tuple[str, str]]) -> None:
    s = ship.ShipSet("t", include=("viewer/**",), root=root)
    paths = ["viewer/a.html", "site/viewer/b.html", "harness/site/viewer/c.html", "README.md"]
    assert ship.select_repo_paths(paths, s, prefix) == expected


def test_the_config_prefix_is_its_folder_inside_the_repository_and_empty_outside(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "harness").mkdir(parents=True)
    inside = ship.parse_config("ship: {}\n", "plimsoll.yaml", repo / "harness")
    at_root = ship.parse_config("ship: {}\n", "plimsoll.yaml", repo)
    outside = ship.parse_config("ship: {}\n", "audit.yaml", tmp_path)
    assert [ship.config_prefix(c, repo) for c in (inside, at_root, outside)] == ["harness/", "", ""]


def test_a_command_sets_inputs_select_repository_paths() -> None:
    s = ship.ShipSet("b", command="kit {out}", inputs=("loop/**", "viewer/*.html"))
    paths = ["loop/kit.py", "viewer/a.html", "viewer/deep/b.html", "README.md"]
    assert ship.select(paths, ship.inputs_set(s)) == ["loop/kit.py", "viewer/a.html"]
