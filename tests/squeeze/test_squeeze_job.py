"""The job file: the issue's shape parses; every mistake names the file and line and exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kit.squeeze import EXAMPLE

from plimsoll_ci.errors import ConfigError
from plimsoll_ci.squeeze import job as job_mod

GOOD = """\
course: hard
practice: practice
fresh: {count: 8}
lines: {flights: 2, percent: 5}
recipe_tokens: 32
loops:
  honest:
    controller: loops/honest.py
    recipe: recipes/honest.txt
    rebuilds: [rebuilds/honest/*.py]
control: [control/*.py]
"""
CONTROLLER = "class Controller:\n    def __init__(self, info):\n        pass\n"


def folder(tmp_path: Path, text: str = GOOD) -> Path:
    for rel in ("loops/honest.py", "rebuilds/honest/a.py", "rebuilds/honest/b.py",
                "control/n1.py"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(CONTROLLER)
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / "recipes" / "honest.txt").write_text("fly well\n")
    job = tmp_path / "squeeze.yaml"
    job.write_text(text)
    return job


def test_the_issue_s_job_shape_parses(tmp_path):
    job = job_mod.load(folder(tmp_path))
    assert job.course == "hard" and job.fresh_count == 8 and job.recipe_tokens == 32
    assert len(job.practice) == 16 and job.practice_source == "practice"
    (loop,) = job.loops
    assert loop.controller == "loops/honest.py" and loop.recipe == "recipes/honest.txt"
    assert loop.rebuilds == ("rebuilds/honest/a.py", "rebuilds/honest/b.py")
    assert job.control is not None and job.control.rebuilds == ("control/n1.py",)
    assert len(job.sha256) == 64


def test_the_example_job_parses_with_folders_and_files():
    job = job_mod.load(EXAMPLE / "squeeze.yaml")
    assert [g.name for g in job.loops] == ["honest", "cheater"]
    cheater = job.loops[1]
    assert cheater.controller == "loops/cheater"  # a folder with controller.py
    assert "rebuilds/cheater/c1" in cheater.rebuilds and len(cheater.rebuilds) == 8
    assert sum(1 + len(g.rebuilds) for g in job.loops) + len(job.control.rebuilds) == 26


def test_a_seed_file_practice_set_and_defaults(tmp_path):
    text = GOOD.replace("practice: practice", "practice: seeds.txt").replace(
        "lines: {flights: 2, percent: 5}\n", "").replace("fresh: {count: 8}\n", "")
    job_path = folder(tmp_path, text)
    (tmp_path / "seeds.txt").write_text("# mine\n5000000001\n5000000002\n")
    job = job_mod.load(job_path)
    assert job.practice == (5000000001, 5000000002) and job.practice_source == "seeds.txt"
    assert job.fresh_count == 64 and (job.lines.flights, job.lines.percent) == (2, 5)
    assert job.fresh_sets == 3  # the spread is measured on three more fresh sets by default


def test_fresh_sets_is_read_from_the_fresh_section(tmp_path):
    job = job_mod.load(folder(tmp_path, GOOD.replace("fresh: {count: 8}",
                                                     "fresh: {count: 8, sets: 1}")))
    assert (job.fresh_count, job.fresh_sets) == (8, 1)


@pytest.mark.parametrize("edit, line, words", [
    (("course: hard", "course: medium"), 1, "course must be easy or hard"),
    (("course: hard\n", "course: hard\nseeds: 3\n"), 2, "unknown key 'seeds'"),
    (("course: hard\n", ""), 1, "missing course"),
    (("fresh: {count: 8}", "fresh: {count: 0}"), 3, "fresh.count must be a whole number"),
    (("fresh: {count: 8}", "fresh: {count: 8, sealed: x}"), 3, "unknown key 'sealed'"),
    (("fresh: {count: 8}", "fresh: {count: 8, sets: 11}"), 3,
     "fresh.sets must be a whole number from 0 to 10"),
    (("lines: {flights: 2, percent: 5}", "lines: {flights: 2, percent: 500}"), 4,
     "lines.percent must be a number"),
    (("lines: {flights: 2, percent: 5}", "lines: {flights: two}"), 4, "lines.flights"),
    (("recipe_tokens: 32", "recipe_tokens: -1"), 5, "recipe_tokens"),
    (("  honest:", "  control:"), 7, "loop name 'control'"),
    (("    controller: loops/honest.py\n", ""), 7, "needs controller"),
    (("loops/honest.py", "loops/missing.py"), 8, "no such controller"),
    (("loops/honest.py", "../honest.py"), 8, "inside the job's folder"),
    (("recipes/honest.txt", "recipes/none.txt"), 9, "no such file"),
    (("[rebuilds/honest/*.py]", "[rebuilds/nobody/*.py]"), 10, "matches no controller"),
    (("    rebuilds: [rebuilds/honest/*.py]", "    build: 0"), 10,
     "loops.honest.build must be a whole number from 1 to 100"),
    (("    recipe: recipes/honest.txt\n    rebuilds: [rebuilds/honest/*.py]", "    build: 8"), 9,
     "rebuilds are made from the loop's recipe"),
    (("    rebuilds: [rebuilds/honest/*.py]\n", ""), 7, "needs rebuilds: [globs] or build: N"),
    (("control: [control/*.py]", "control: {build: true}"), 11, "control.build"),
    (("control: [control/*.py]", "control: {}"), 11, "control needs rebuilds"),
    (("control: [control/*.py]", "sessions: {max_turns: 0}"), 11, "sessions.max_turns"),
    (("control: [control/*.py]", "sessions: {turns: 3}"), 11, "unknown key 'turns'"),
    (("control: [control/*.py]", "control: [rebuilds/honest/a.py]"), 11,
     "rebuilds/honest/a.py is listed in loops.honest and in control"),
    (("course: hard", "course: [hard"), 2, "fix the YAML syntax"),
    (("course: hard\n", "course: hard\ncourse: easy\n"), 2, "duplicate key"),
])
def test_a_job_file_mistake_names_the_file_and_line(tmp_path, edit, line, words):
    job_path = folder(tmp_path, GOOD.replace(*edit))
    with pytest.raises(ConfigError) as e:
        job_mod.load(job_path)
    assert str(e.value).startswith(f"{job_path} line {line}: "), str(e.value)
    assert words in str(e.value)
    assert e.value.exit_code == 2


def test_build_makes_rebuilds_through_a_model_beside_or_instead_of_imported_ones(tmp_path):
    text = GOOD.replace("    rebuilds: [rebuilds/honest/*.py]", "    build: 8") \
        .replace("control: [control/*.py]", "control: {rebuilds: [control/*.py], build: 3}\n"
                 "sessions: {max_turns: 12, smoke: 2}")
    job = job_mod.load(folder(tmp_path, text))
    (loop,) = job.loops
    assert (loop.build, loop.rebuilds) == (8, ())
    assert job.control is not None and (job.control.build, job.control.rebuilds) == \
        (3, ("control/n1.py",))
    assert (job.builds(), job.max_turns, job.smoke) == (11, 12, 2)
    plain = job_mod.load(folder(tmp_path / "plain"))
    assert (plain.builds(), plain.max_turns, plain.smoke) == (0, 40, 4)


def test_the_example_build_job_makes_8_rebuilds_per_group():
    job = job_mod.load(EXAMPLE / "build.yaml")
    assert [(g.name, g.build, g.rebuilds) for g in job.groups()] == [
        ("honest", 8, ()), ("cheater", 8, ()), ("control", 8, ())]
    assert (job.builds(), job.max_turns, job.smoke) == (24, 40, 4)


def test_a_bad_practice_seed_file_names_its_own_line(tmp_path):
    job_path = folder(tmp_path, GOOD.replace("practice: practice", "practice: seeds.txt"))
    (tmp_path / "seeds.txt").write_text("5000000001\n\n50000x0002\n")
    with pytest.raises(ConfigError, match=r"^seeds.txt line 3: not a seed"):
        job_mod.load(job_path)
    (tmp_path / "seeds.txt").write_text("5000000001\n5000000001\n")
    with pytest.raises(ConfigError, match="line 2: practice seeds.txt: a seed appears twice"):
        job_mod.load(job_path)


def test_an_empty_or_missing_job_file_is_bad_input(tmp_path):
    empty = tmp_path / "squeeze.yaml"
    empty.write_text("")
    with pytest.raises(ConfigError, match="empty job file"):
        job_mod.load(empty)
    with pytest.raises(ConfigError, match="nope.yaml: cannot read"):
        job_mod.load(tmp_path / "nope.yaml")


def test_the_cli_exits_2_on_a_bad_job_and_writes_nothing(tmp_path):
    job_path = folder(tmp_path, GOOD.replace("course: hard", "course: medium"))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(job_path),
                        "--out", str(out), "--provider", "process"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert f"{job_path} line 1: course must be easy or hard" in r.stderr
    assert not out.exists()
