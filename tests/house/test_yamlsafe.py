"""yamlsafe.py: the one YAML loader of plimsoll.yaml and squeeze.yaml. Nesting, alias expansion
and recursive aliases are bounded while composing, with a line (issue 28, row 6); a YAML mistake
reads the same in both files (issue 29: their handlers had drifted, line 0 in one, 1 in the
other)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from plimsoll_ci import yamlsafe
from plimsoll_ci.errors import ConfigError
from plimsoll_ci.shipscan import ship
from plimsoll_ci.squeeze import job as job_mod

CONFIG = """\
withheld: withheld.json
ship:
  viewer:
    include: ["tasks/**"]
"""


def bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['l0: &l0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


HOSTILE = [
    ("alias-bomb", bomb(), "line 10: alias *l4 expands the document past 100,000 values"),
    ("recursive-alias", "x: &me\n  - *me\n", "line 6: alias *me is used inside the node it names"),
    ("recursive-map", "x: &me {a: *me}\n", "line 5: alias *me is used inside the node it names"),
    ("nested-5000", "x: " + "[" * 5000 + "]" * 5000 + "\n",
     "line 5: nested more than 64 levels deep"),
]


@pytest.mark.parametrize("name, extra, message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_plimsoll_yaml_refuses_hostile_yaml_at_once_with_a_line(tmp_path: Path, name: str,
                                                                extra: str, message: str) -> None:
    (tmp_path / "plimsoll.yaml").write_text(CONFIG + extra)
    start = time.monotonic()
    with pytest.raises(ConfigError, match=re.escape(f"plimsoll.yaml {message}")):
        ship.load_config(tmp_path / "plimsoll.yaml")
    assert time.monotonic() - start < 5


def test_aliases_that_do_not_multiply_still_read(tmp_path: Path) -> None:
    text = ("withheld: withheld.json\nship:\n  a: &set\n    include: [\"tasks/**\"]\n"
            "    exclude: &ex [\"**/*.test.mjs\"]\n  b:\n    <<: *set\n    root: site\n"
            "  c: {include: [\"lib/**\"], exclude: *ex}\n")
    cfg = ship.parse_config(text, "plimsoll.yaml", tmp_path)
    assert cfg.ship["b"].include == ("tasks/**",) and cfg.ship["b"].root == "site"
    assert cfg.ship["c"].exclude == ("**/*.test.mjs",)


def test_a_document_just_within_the_bounds_reads() -> None:
    levels = yamlsafe.MAX_DEPTH - 2  # the top mapping and the scalar are levels too
    deep = "x: " + "[" * levels + "1" + "]" * levels + "\n"
    assert yamlsafe.load(deep, "deep.yaml") is not None
    # 1 + (1 + 1,000) + (1 + 1 + 98 x 1,000) = 99,004 values once expanded; 2 more aliases cross
    a = "a: &a [" + ", ".join(["1"] * 999) + "]\n"
    assert len(yamlsafe.load(a + f"b: [{', '.join(['*a'] * 98)}]\n", "wide.yaml")["b"]) == 98
    with pytest.raises(ConfigError, match="wide.yaml line 2: alias [*]a expands the document"):
        yamlsafe.load(a + f"b: [{', '.join(['*a'] * 100)}]\n", "wide.yaml")


@pytest.mark.parametrize("bad", ["course: [hard\n", "a: b\n c: d: e\n", "a: \"x\x07\"\n",
                                 "a: 1\n\ta: 2\n"])
def test_a_yaml_mistake_reads_the_same_in_a_job_and_in_plimsoll_yaml(tmp_path: Path,
                                                                     bad: str) -> None:
    with pytest.raises(ConfigError) as in_job:
        job_mod.parse(bad, "same.yaml", tmp_path)
    with pytest.raises(ConfigError) as in_config:
        ship.parse_config(bad, "same.yaml", tmp_path)
    assert str(in_job.value) == str(in_config.value)
    assert re.match(r"same\.yaml line [1-9]\d*: .*fix the YAML syntax$", str(in_job.value))
