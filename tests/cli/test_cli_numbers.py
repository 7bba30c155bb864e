"""Every numeric flag of `seeds`, `squeeze`, `grade` and `fly` has a range, checked by argparse
before anything runs (issue 28, row 9): out of it, exit 2 naming the flag and the range, with no
traceback and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from plimsoll_ci import cli

HUGE = "9" * 5000  # more digits than int() reads by default: refused before int() sees it

RUN = ["squeeze", "run", "{tmp}/squeeze.yaml", "--out", "{tmp}/out"]
GRADE = ["grade", "--controller", "{tmp}/c.py", "--course", "hard", "--seeds", "1",
         "--provider", "process"]
FLY = ["fly", "--controller", "{tmp}/c.py", "--course", "hard"]
CASES = [
    (RUN + ["--jobs", "100000"], "--jobs", "between 0 and 256"),
    (RUN + ["--jobs", "-1"], "--jobs", "between 0 and 256"),
    (RUN + ["--jobs", HUGE], "--jobs", "give a whole number between 0 and 256"),
    (RUN + ["--jobs", "1e3"], "--jobs", "give a whole number"),
    (RUN + ["--jobs=-+5"], "--jobs", "give a whole number"),
    (RUN + ["--cpu-per-tick", "inf"], "--cpu-per-tick", "above 0 and at most 60"),
    (RUN + ["--cpu-per-tick", "nan"], "--cpu-per-tick", "above 0 and at most 60"),
    (RUN + ["--cpu-per-flight", "0"], "--cpu-per-flight", "above 0 and at most 3600"),
    (RUN + ["--cpu-startup", "1e308"], "--cpu-startup", "above 0 and at most 3600"),
    (RUN + ["--wall-per-tick", "-5"], "--wall-per-tick", "above 0 and at most 3600"),
    (RUN + ["--memory-mb", "99999999999"], "--memory-mb", "between 64 and 65536"),
    (["squeeze", "recipe", "--record", "{tmp}", "--out", "{tmp}/out", "--tokens", "1000000000"],
     "--tokens", "between 1 and 100000"),
    (["squeeze", "recipe", "--record", "{tmp}", "--out", "{tmp}/out", "--drafts", "0"],
     "--drafts", "between 1 and 32"),
    (["squeeze", "canary", "{tmp}/squeeze.yaml", "--echo", "--out", "{tmp}/out", "--jobs",
      "1000000"], "--jobs", "between 1 and 256"),
    (GRADE[:5] + ["--fresh", "1000000", "--provider", "process"], "--fresh",
     "between 1 and 10000"),
    (GRADE + ["--memory-mb", "1"], "--memory-mb", "between 64 and 65536"),
    (GRADE + ["--cpu-per-tick", "inf"], "--cpu-per-tick", "above 0 and at most 60"),
    (FLY + ["--smoke", "100000"], "--smoke", "between 1 and 64"),
    (FLY + ["--plot-seed", "-1"], "--plot-seed", "between 0 and 18446744073709551615"),
    (["seeds", "draw", "1" + "0" * 100, "-o", "{tmp}/out"], "N", "between 1 and 10000"),
    (["seeds", "draw", "4", "-o", "{tmp}/out", "--bits", "1000"], "--bits", "between 40 and 64"),
]


@pytest.mark.parametrize("argv, flag, message", CASES,
                         ids=[f"{' '.join(c[0][:2])} {c[1]}" for c in CASES])
def test_a_numeric_flag_out_of_range_exits_2_naming_flag_and_range(tmp_path: Path, capsys, argv,
                                                                  flag, message) -> None:
    (tmp_path / "squeeze.yaml").write_text("course: easy\n")
    (tmp_path / "c.py").write_text("raise SystemExit('imported')\n")  # never imported
    with pytest.raises(SystemExit) as stop:
        cli.main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    assert f"error: argument {flag}: " in err and message in err, err
    assert "Traceback" not in err and HUGE not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", [RUN + ["--jobs", "0", "--cpu-per-tick", "0.05",
                                         "--memory-mb", "1024"],
                                  ["seeds", "draw", "10000", "-o", "{tmp}/set.json"]])
def test_values_in_range_parse(tmp_path: Path, argv) -> None:
    parser = cli.build_parser([a.format(tmp=tmp_path) for a in argv])
    parser.parse_args([a.format(tmp=tmp_path) for a in argv])
