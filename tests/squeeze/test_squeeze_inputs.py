"""A job reads nothing from outside its folder, and nothing without a bound (issue 28, rows 3, 5
and 6): a link leaving the folder is refused naming the path; a device, a FIFO or a huge file in
place of the job or its seed file is refused with the bound; an alias bomb, a recursive alias and
5,000 levels of nesting stop at once with a line. Exit 2, no traceback, nothing written."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from kit.cli import run_process

from plimsoll_ci.errors import BadInput, ConfigError
from plimsoll_ci.squeeze import job as job_mod
from plimsoll_ci.squeeze import recipes

SECRET = "the held-out seeds are 9912345678 and 9923456789"
JOB = """\
course: hard
practice: practice
fresh: {count: 8}
loops:
  honest:
    controller: loops/honest.py
    recipe: recipes/honest.txt
    rebuilds: [rebuilds/honest/*.py]
control: [control/*.py]
"""
CONTROLLER = "class Controller:\n    def __init__(self, info):\n        pass\n"


def job_folder(root: Path, text: str = JOB) -> Path:
    """A job folder under `root / "job"` beside an `outside` folder holding a secret."""
    base = root / "job"
    for rel in ("loops/honest.py", "rebuilds/honest/a.py", "control/n1.py"):
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(CONTROLLER)
    (base / "recipes").mkdir()
    (base / "recipes" / "honest.txt").write_text("fly well\n")
    outside = root / "outside"
    (outside / "rebuilds").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "rebuilds" / "leak.py").write_text(CONTROLLER + f"# {SECRET}\n")
    (base / "squeeze.yaml").write_text(text)
    return base / "squeeze.yaml"


def squeeze_run(job: Path, out: Path, timeout: float = 60) -> tuple[subprocess.CompletedProcess,
                                                                    float]:
    start = time.monotonic()
    r = run_process("squeeze", "run", str(job), "--out", str(out), "--provider", "process",
                    timeout=timeout)
    return r, time.monotonic() - start


def relink(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for p in sorted(path.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        path.rmdir()
    else:
        path.unlink()
    path.symlink_to(target)


# ------------------------------------------------------------------ row 3: links out of the folder


def test_a_recipe_that_links_outside_the_job_folder_is_refused_and_its_text_never_shown(tmp_path):
    job = job_folder(tmp_path)
    relink(job.parent / "recipes" / "honest.txt", tmp_path / "outside" / "secret.txt")
    with pytest.raises(ConfigError) as e:
        job_mod.load(job)
    assert str(e.value).startswith(f"{job} line 7: loops.honest.recipe: recipes/honest.txt ")
    assert "leads outside" in str(e.value) and SECRET not in str(e.value)
    out = tmp_path / "out"
    r, _ = squeeze_run(job, out)
    assert r.returncode == 2, r.stderr
    assert "recipes/honest.txt" in r.stderr and "leads outside" in r.stderr
    assert SECRET not in r.stdout + r.stderr and "Traceback" not in r.stderr
    assert not out.exists()  # no report.md, evidence.json or bundle carries it


def test_a_recipe_swapped_for_a_link_after_the_job_was_read_is_refused_when_read(tmp_path):
    job = job_mod.load(job_folder(tmp_path))
    relink(job.base / "recipes" / "honest.txt", tmp_path / "outside" / "secret.txt")
    with pytest.raises(BadInput, match="recipe: recipes/honest.txt leads outside") as e:
        recipes.load(job.base, "recipes/honest.txt", 32, str(job.path))
    assert SECRET not in str(e.value)


@pytest.mark.parametrize("linked, line", [
    ("rebuilds", 8),  # a rebuild glob reached through a linked folder
    ("loops", 6),  # the loop's own controller through a linked folder
])
def test_a_controller_reached_through_a_folder_linked_outside_is_refused(tmp_path, linked, line):
    job = job_folder(tmp_path)
    target = tmp_path / "outside" / linked
    target.mkdir(exist_ok=True)
    (target / "honest").mkdir(exist_ok=True)
    (target / "honest" / "a.py").write_text(CONTROLLER)
    (target / "honest.py").write_text(CONTROLLER)
    relink(job.parent / linked, target)
    with pytest.raises(ConfigError) as e:
        job_mod.load(job)
    assert str(e.value).startswith(f"{job} line {line}: ")
    assert "leads outside" in str(e.value)


def test_a_practice_seed_file_linked_outside_the_job_folder_is_refused(tmp_path):
    job = job_folder(tmp_path, JOB.replace("practice: practice", "practice: seeds.txt"))
    (tmp_path / "outside" / "seeds.txt").write_text("9912345678\n")
    (job.parent / "seeds.txt").symlink_to(tmp_path / "outside" / "seeds.txt")
    with pytest.raises(ConfigError, match=r"line 2: practice: seeds.txt leads outside"):
        job_mod.load(job)


def test_links_that_stay_inside_the_job_folder_are_followed(tmp_path):
    job = job_folder(tmp_path)
    (job.parent / "recipes" / "v2.txt").write_text("fly better\n")
    relink(job.parent / "recipes" / "honest.txt", Path("v2.txt"))
    loaded = job_mod.load(job)
    assert loaded.loops[0].recipe == "recipes/honest.txt"
    assert recipes.load(loaded.base, "recipes/honest.txt", 32, "job").text == "fly better"


# --------------------------------------------------------- row 5: reads bounded, devices refused


def test_a_job_file_that_is_a_device_or_too_large_is_refused_with_its_bound(tmp_path):
    with pytest.raises(ConfigError, match="/dev/zero: not a regular file"):
        job_mod.load("/dev/zero")
    big = tmp_path / "squeeze.yaml"
    big.write_text("# padding\n" * (job_mod.MAX_JOB_BYTES // 10 + 1))
    with pytest.raises(ConfigError, match=r"over the bound of 1 MiB"):
        job_mod.load(big)
    r, took = squeeze_run(Path("/dev/zero"), tmp_path / "out")
    assert r.returncode == 2 and "not a regular file" in r.stderr
    assert "Traceback" not in r.stderr and took < 30


def test_a_practice_seed_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    job = job_folder(tmp_path, JOB.replace("practice: practice", "practice: seeds.txt"))
    os.mkfifo(job.parent / "seeds.txt")
    r, took = squeeze_run(job, tmp_path / "out", timeout=30)
    assert r.returncode == 2, r.stderr
    assert f"{job} line 2: practice seeds.txt: not a regular file" in r.stderr, r.stderr
    assert took < 20


# ------------------------------------------------------------- row 6: YAML aliases and nesting


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['l0: &l0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


HOSTILE = [
    ("alias-bomb", JOB + alias_bomb(), "line 15: alias *l4 expands the document past 100,000"),
    ("recursive-alias", JOB + "extra: &me\n  - *me\n", "line 11: alias *me is used inside the "
     "node it names"),
    ("nested-5000", JOB + "extra: " + "[" * 5000 + "]" * 5000 + "\n",
     "line 10: nested more than 64 levels deep"),
    ("nested-maps", JOB + "extra: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
     "line 10: nested more than 64 levels deep"),
]


@pytest.mark.parametrize("name, text, message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_yaml_in_a_job_stops_at_once_with_a_line_and_no_traceback(tmp_path, name, text,
                                                                          message):
    job = job_folder(tmp_path, text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        job_mod.load(job)
    out = tmp_path / "out"
    r, took = squeeze_run(job, out, timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"{job} {message}" in r.stderr
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr
    assert took < 20 and not out.exists()


def test_a_recipe_record_file_over_the_record_bound_is_refused_before_it_is_read(tmp_path):
    from plimsoll_ci.squeeze import compress

    record = tmp_path / "record"
    record.mkdir()
    (record / "notes.md").write_text("hovered, then flew\n")
    with open(record / "transcript.txt", "wb") as fh:  # sparse: 8 GiB that take no disk
        fh.truncate(8 << 30)
    start = time.monotonic()
    with pytest.raises(BadInput, match=r"transcript\.txt: \d+ bytes, over the bound of"):
        compress.read_record(record)
    assert time.monotonic() - start < 5
