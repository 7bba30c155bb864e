"""A YAML mistake reads the same wherever plimsoll-ci reads YAML: `plimsoll.yaml`, a squeeze job,
an eval task's front matter and a values file go through the one loader (`yamlsafe`), with one
error shape and lines counted from 1 (issue 29: the handlers had drifted; a values file named no
line at all for a character YAML refuses)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plimsoll_ci import valuefiles, yamlsafe
from plimsoll_ci.errors import BadInput
from plimsoll_ci.evalharness import tasks
from plimsoll_ci.shipscan import ship
from plimsoll_ci.squeeze import job as job_mod

SHAPE = re.compile(r"line ([1-9][0-9]*): (.*); fix the YAML syntax$")

# (broken YAML, the line of its mistake)
BROKEN = [
    ("a: b\n c: d: e\n", 2),
    ("a: \"x\x07\"\n", 1),
    ("a: 1\n\ta: 2\n", 2),
    ("\u00e9: 1\n\u00e9t\u00e9: 2\nb: \"\x07\"\n", 3),
    ("a: 1\nb: *nowhere\n", 2),
    ("a: [1, 2]]\n", 1),
]


def _said(e: BadInput, origin: str) -> tuple[int, str]:
    text = str(e)
    assert text.startswith(origin + " line "), text
    found = SHAPE.search(text)
    assert found, text
    return int(found.group(1)), found.group(2)


@pytest.mark.parametrize("bad, line", BROKEN, ids=[f"line-{n}-{i}" for i, (_, n) in
                                                    enumerate(BROKEN)])
def test_a_yaml_mistake_names_the_same_line_and_problem_in_every_kind_of_file(
        tmp_path: Path, bad: str, line: int) -> None:
    said = {}
    with pytest.raises(BadInput) as e:
        ship.parse_config(bad, "plimsoll.yaml", tmp_path)
    said["plimsoll.yaml"] = _said(e.value, "plimsoll.yaml")
    with pytest.raises(BadInput) as e:
        job_mod.parse(bad, "squeeze.yaml", tmp_path)
    said["squeeze job"] = _said(e.value, "squeeze.yaml")
    with pytest.raises(BadInput) as e:
        valuefiles.parse(bad.encode(), "yaml", "seeds.yaml")
    said["values file"] = _said(e.value, "values file seeds.yaml")
    task = tmp_path / "task.md"
    task.write_text("---\n" + bad + "---\nText\n")
    with pytest.raises(BadInput) as e:
        tasks.parse_task(task)
    at, problem = _said(e.value, str(task))
    said["eval task"] = (at - 1, problem)  # its front matter starts on the file's second line
    assert set(said.values()) == {(line, said["plimsoll.yaml"][1])}, said


def test_a_file_of_a_million_brackets_is_refused_not_a_crash() -> None:
    # libyaml's own composer recursed once per `[` and crashed the process (the hook's withheld
    # guard sniffs every staged file this way); the one loader composes within its bounds.
    assert valuefiles.structure("notes.txt", b"[" * 1_000_000) is None
    with pytest.raises(BadInput, match=r"seeds\.yaml line 1: nested more than 64 levels deep"):
        valuefiles.parse(b"[" * 1_000_000, "yaml", "seeds.yaml")


@pytest.mark.parametrize("bad, line", BROKEN, ids=[f"line-{n}-{i}" for i, (_, n) in
                                                    enumerate(BROKEN)])
def test_the_loader_names_the_same_line_with_or_without_libyaml(bad: str, line: int) -> None:
    import yaml

    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("PyYAML without libyaml: only its own parser to compare")
    said = []
    for libyaml in (True, False):
        with pytest.raises(BadInput) as e:
            yamlsafe.load(bad, "f.yaml", yamlsafe.loader_class(libyaml))
        said.append(_said(e.value, "f.yaml")[0])
    assert said == [line, line]
