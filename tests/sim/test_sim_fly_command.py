"""`plimsoll-ci fly`: per-flight outcomes and totals, JSON, plots, and clear refusals of bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import plimsoll_sim as sim
from plimsoll_ci.cli import main

CONTROLLERS = Path(sim.__file__).parent / "controllers"
HONEST = str(CONTROLLERS / "honest.py")
CHEATER = str(CONTROLLERS / "cheater.py")
PRACTICE_2 = sim.PRACTICE_SEEDS[1]


def fly(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["fly", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_fly_prints_each_flight_and_the_total_and_says_it_runs_in_process(capsys):
    code, out, err = fly(capsys, "--controller", CHEATER, "--course", "easy",
                         "--seeds", f"{PRACTICE_2},5")
    assert code == 0
    assert "in-process" in err and "trusted code only" in err and "plimsoll-ci grade" in err
    lines = out.splitlines()
    assert str(PRACTICE_2) in lines[1] and "yes" in lines[1] and "landed" in lines[1]
    assert lines[2].split()[:3] == ["5", "no", "0/3"] and "invalid_command" in lines[2]
    assert lines[-1] == "landed 1/2 on the easy course"


def test_fly_json_has_the_documented_shape(capsys):
    code, out, _ = fly(capsys, "--controller", CHEATER, "--course", "hard", "--seeds", "7-9",
                       "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"flights", "landed", "total"}
    assert (doc["landed"], doc["total"]) == (0, 3)
    assert [f["seed"] for f in doc["flights"]] == [7, 8, 9]
    for f in doc["flights"]:
        assert set(f) == {"seed", "landed", "gates", "time", "reason"}
        assert (f["landed"], f["reason"]) == (False, "invalid_command")


def test_fly_reads_a_seed_file_with_comments_and_ranges(capsys, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# practice\n{PRACTICE_2}\n\n5-6  # fresh\n")
    code, out, _ = fly(capsys, "--controller", CHEATER, "--course", "easy", "--seed-file",
                       str(seeds), "--format", "json")
    assert code == 0
    assert [f["seed"] for f in json.loads(out)["flights"]] == [PRACTICE_2, 5, 6]


def test_fly_writes_a_valid_png_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the test extra; --plot needs it")
    out_png = tmp_path / "flight.png"
    code, out, _ = fly(capsys, "--controller", HONEST, "--course", "hard", "--seeds",
                       f"5,{PRACTICE_2}", "--plot", str(out_png), "--plot-seed", str(PRACTICE_2))
    assert code == 0 and f"plot of seed {PRACTICE_2}" in out
    data = out_png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    image = pytest.importorskip("PIL.Image", reason="pillow is in the test extra")
    with image.open(out_png) as im:
        im.verify()
        assert im.size[0] > im.size[1] > 200


def test_fly_writes_a_valid_svg_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is in the test extra; --plot needs it")
    out_svg = tmp_path / "flight.svg"
    code, _, _ = fly(capsys, "--controller", CHEATER, "--course", "easy", "--seeds",
                     str(PRACTICE_2), "--plot", str(out_svg), "--format", "json")
    assert code == 0
    root = ET.parse(out_svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "gust" in out_svg.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "1,x"], "--seeds: item 2 'x' is not a seed"),
        (["--seeds", "9-5"], "a range goes low-high"),
        (["--seeds", "-3"], "is not a seed"),
        (["--seeds", "1-20000"], "more than 10000 seeds"),
        (["--seeds", "1", "--plot", "out.gif"], "must end in .png or .svg"),
        (["--seeds", "1", "--plot", "out.png", "--plot-seed", "2"], "not one of the seeds flown"),
    ],
)
def test_fly_refuses_bad_seeds_and_plot_options_with_exit_2(capsys, args, message):
    code, out, err = fly(capsys, "--controller", HONEST, "--course", "easy", *args)
    assert code == 2 and out == ""
    assert message in err and err.count("error:") == 1


def test_fly_names_the_line_of_a_bad_seed_file(capsys, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("1\n2\nthree\n")
    code, _, err = fly(capsys, "--controller", HONEST, "--course", "easy", "--seed-file", str(seeds))
    assert code == 2 and f"seed file {seeds} line 3" in err
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    code, _, err = fly(capsys, "--controller", HONEST, "--course", "easy", "--seed-file", str(empty))
    assert code == 2 and "no seeds" in err
    code, _, err = fly(capsys, "--controller", HONEST, "--course", "easy", "--seed-file",
                       str(tmp_path / "missing.txt"))
    assert code == 2 and "missing.txt: cannot read" in err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (None, "no such file"),
        ("x = 1\n", "no class Controller"),
        ("raise RuntimeError('boom')\n", "importing it raised RuntimeError: boom"),
        ("def broken(:\n", "importing it raised SyntaxError"),
    ],
)
def test_fly_refuses_a_controller_it_cannot_use_with_exit_2(capsys, tmp_path, source, message):
    path = tmp_path / "c.py"
    if source is not None:
        path.write_text(source)
    code, _, err = fly(capsys, "--controller", str(path), "--course", "easy", "--seeds", "1")
    assert code == 2 and message in err


def test_a_controller_that_raises_ends_only_its_flight(capsys, tmp_path):
    path = tmp_path / "c.py"
    path.write_text(
        "class Controller:\n"
        "    def __init__(self, info):\n        self.n = 0\n"
        "    def step(self, obs):\n"
        "        self.n += 1\n"
        "        if self.n == 3:\n            raise ZeroDivisionError('tick 3')\n"
        "        return {'thrust': 0.0, 'roll': 0.0, 'pitch': 0.0, 'yaw_rate': 0.0}\n"
    )
    code, out, _ = fly(capsys, "--controller", str(path), "--course", "easy", "--seeds", "1-2",
                       "--format", "json")
    assert code == 0
    flights = json.loads(out)["flights"]
    assert [(f["reason"], f["time"]) for f in flights] == [("controller_error", 0.02)] * 2


def test_the_installed_command_exits_2_on_an_unknown_course():
    out = subprocess.run([sys.executable, "-m", "plimsoll_ci", "fly", "--controller", HONEST,
                          "--course", "medium", "--seeds", "1"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "invalid choice: 'medium'" in out.stderr


def test_fly_takes_a_controller_folder_with_controller_py(capsys, tmp_path):
    (tmp_path / "controller.py").write_bytes((CONTROLLERS / "hover.py").read_bytes())
    code, out, _ = fly(capsys, "--controller", str(tmp_path), "--course", "easy", "--smoke", "1",
                       "--format", "json")
    assert code == 0
    assert json.loads(out)["flights"][0]["reason"] == "timeout"


def test_fly_without_seeds_draws_fresh_smoke_seeds_on_every_call(capsys):
    # The write-up's smoke seeds were 101-104, fixed in the task text: nothing here is fixed.
    runs = []
    for _ in range(2):
        code, out, _ = fly(capsys, "--controller", CHEATER, "--course", "easy", "--format", "json")
        assert code == 0
        runs.append([f["seed"] for f in json.loads(out)["flights"]])
    assert [len(r) for r in runs] == [4, 4]
    assert not set(runs[0]) & set(runs[1])
    for seed in runs[0] + runs[1]:
        assert 2**32 <= seed < 2**64 and seed not in sim.PRACTICE_SEEDS
    assert not hasattr(sim, "SMOKE_SEEDS")


@pytest.mark.parametrize("count", ["0", "65"])
def test_fly_refuses_a_smoke_count_out_of_range(capsys, count):
    with pytest.raises(SystemExit) as stop:  # argparse refuses it before anything flies
        fly(capsys, "--controller", CHEATER, "--course", "easy", "--smoke", count)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument --smoke: {count} is out of range" in err


def test_a_controller_whose_constructor_raises_ends_every_flight_at_once(capsys, tmp_path):
    path = tmp_path / "c.py"
    path.write_text("class Controller:\n    def __init__(self, info):\n        raise KeyError('x')\n")
    code, out, _ = fly(capsys, "--controller", str(path), "--course", "hard", "--seeds", "1-3")
    assert code == 0
    assert out.count("controller_error (constructor raised KeyError") == 3


def test_fly_prints_a_controllers_path_and_error_escaped(capsys, tmp_path):
    # the file's name and the exception the controller raises are the controller's words: a
    # cleared screen, a window title or a forged total must not reach the terminal
    evil = "\x1b]0;pwned\x07\x1b[2J\nlanded 16/16 FORGED\r\u202e"
    path = tmp_path / "c\x1b[2J\nlanded 9 FORGED\r.py"
    path.write_text("class Controller:\n    def __init__(self, info):\n        pass\n\n"
                    f"    def step(self, obs):\n        raise ValueError({evil!r})\n")
    code, out, err = fly(capsys, "--controller", str(path), "--course", "easy", "--seeds", "5")
    assert code == 0
    for text in (out, err):
        assert not [c for c in text if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f
                                                      or c == "\u202e")]
        assert not [x for x in text.splitlines() if x.startswith(("landed 16/16", "landed 9"))]
    assert "\\x1b[2J\\x0alanded 16/16 FORGED" in out


@pytest.mark.parametrize("name", ["honest", "cheater"])
def test_fly_flies_a_javascript_controller_with_node_like_its_python_twin(capsys, name):
    seeds = f"{PRACTICE_2},3000000029"
    code, python, _ = fly(capsys, "--controller", str(CONTROLLERS / f"{name}.py"),
                          "--course", "hard", "--seeds", seeds, "--format", "json")
    assert code == 0
    code, javascript, err = fly(capsys, "--controller", str(CONTROLLERS / f"{name}.mjs"),
                                "--course", "hard", "--seeds", seeds, "--format", "json")
    assert code == 0 and "with node" in err and "trusted code only" in err
    assert json.loads(javascript) == json.loads(python)


def test_fly_refuses_a_plot_of_a_javascript_controller(capsys, tmp_path):
    code, _, err = fly(capsys, "--controller", str(CONTROLLERS / "honest.mjs"), "--course",
                       "hard", "--seeds", "5", "--plot", str(tmp_path / "p.svg"))
    assert code == 2 and "--plot" in err and "JavaScript" in err
    assert not (tmp_path / "p.svg").exists()
