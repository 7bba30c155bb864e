"""Structured values files: YAML, JSON, TOML and CSV with `--select` (issue 32, item 1).

A seeds file kept in YAML was read as lines: `heldout:` became a withheld word and `- 48213377123`
a text no other spelling of the seed matched, so the seed lint stayed quiet and `0xb39bdc063` in a
shipped file went unfound. These tests run the CLI in-process, as a user would, and hand all it
prints to the leak guard.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.cli import run_cli
from kit.scan import LeakGuard

from plimsoll_ci import valuefiles

USER_SEED = 48213377123  # the seed the user found written as 0xb39bdc063 in a shipped file
ROUND = 800_000_000  # a round number below the hunt horizon: the lint's business
SEEDS = [USER_SEED, 61877402391, 93510274467, 17253309981, 70012845519, 39981264027,
         85522019313, 24418830657, 56690213341, 11983047725, 78420015993, 45207719861,
         66103358427, 29317442085, 90871126743, ROUND]
assert hex(USER_SEED) == "0xb39bdc063"

YAML = "# held-out seeds\nheldout:\n  seeds:\n" + "".join(f"  - {s}\n" for s in SEEDS) + \
    "  note: keep these private\n"
FILES = {
    "seeds.yaml": YAML,
    "seeds.json": json.dumps({"heldout": {"seeds": SEEDS}}),
    "seeds.toml": "[heldout]\nseeds = [" + ", ".join(map(str, SEEDS)) + "]\n",
    "seeds.csv": "flight,seed\n" + "".join(f"f{n},{s}\n" for n, s in enumerate(SEEDS)),
}
SELECT = {"seeds.yaml": "heldout.seeds[*]", "seeds.json": "heldout.seeds[*]",
          "seeds.toml": "heldout.seeds[*]", "seeds.csv": "seed"}


@pytest.fixture
def guard(capsys: pytest.CaptureFixture[str]):
    """A leak guard over the seeds; at teardown it checks everything the test printed."""
    g = LeakGuard([str(s) for s in SEEDS])
    yield g
    out, err = capsys.readouterr()
    g.text(out, "stdout")
    g.text(err, "stderr")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A harness folder with the seeds in every format, and the current folder."""
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "seeds.txt").write_text("".join(f"{s}\n" for s in SEEDS))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def entries(path: Path) -> list[dict]:
    return json.loads(path.read_text())["entries"]


def test_a_yaml_seeds_file_built_with_select_gives_number_entries_and_the_seed_lint_warns(
        folder, capsys, guard):
    code, _, err = run_cli("withheld", "build", "--values", "seeds.yaml",
                       "--select", "heldout.seeds[*]", "-o", "withheld.json", guard=guard)
    assert code == 0, err
    got = entries(folder / "withheld.json")
    assert [e["type"] for e in got] == ["number"] * 16
    assert got[0]["id"] == "seeds.yaml:heldout.seeds[0]"
    assert got[15]["id"] == "seeds.yaml:heldout.seeds[15]"
    # the round seed below the horizon is what the lint warns about, by its place
    assert "seed lint: seeds.yaml:heldout.seeds[15]: hunt" in err
    assert "guessable: a round number" in err
    guard.file(folder / "withheld.json")


def test_a_hex_written_seed_in_a_shipped_file_is_found_by_scan_and_the_key_word_is_not(
        folder, capsys, guard):
    task = folder / "task"
    task.mkdir()
    (task / "config.js").write_text("export const seed = 0xb39bdc063;  // the heldout run\n")
    (task / "README.md").write_text("The heldout seeds are kept private.\n")
    code, _, err = run_cli("withheld", "build", "--values", "seeds.yaml",
                       "--select", "heldout.seeds[*]", "-o", "withheld.json", guard=guard)
    assert code == 0, err
    code, out, err = run_cli("scan", "--set", "withheld.json", "task",
                         "--format", "json", guard=guard)
    assert code == 1, out + err
    found = [(f["path"], f["entry"]) for f in json.loads(out)["findings"]]
    assert found == [("task/config.js", "seeds.yaml:heldout.seeds[0]")]


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_format_with_select_gives_the_digests_of_the_plain_text_file(
        folder, capsys, guard, name):
    assert run_cli("withheld", "build", "--values", "seeds.txt",
               "-o", "plain.json", guard=guard)[0] == 0
    code, _, err = run_cli("withheld", "build", "--values", name,
                       "--select", SELECT[name], "-o", "set.json", guard=guard)
    assert code == 0, err
    plain = entries(folder / "plain.json")
    got = entries(folder / "set.json")
    assert [(e["type"], e["digest"]) for e in got] == [(e["type"], e["digest"]) for e in plain]


@pytest.mark.parametrize("name, text, hint", [
    ("seeds.yaml", YAML, "heldout.seeds[*] (16 numbers)"),
    ("seeds.yml", YAML, "heldout.seeds[*] (16 numbers)"),
    ("seeds.json", FILES["seeds.json"], "heldout.seeds[*] (16 numbers)"),
    ("seeds.toml", FILES["seeds.toml"], "heldout.seeds[*] (16 numbers)"),
    ("seeds.csv", FILES["seeds.csv"], "seed (16 numbers)"),
    # a .txt is known by its content: a YAML mapping of lists, a one-line JSON array
    ("copy.txt", YAML, "heldout.seeds[*] (16 numbers)"),
    ("line.txt", json.dumps(SEEDS) + "\n", "[*] (16 numbers)"),
    ("dashes.txt", "".join(f"- {s}\n" for s in SEEDS), "[*] (16 numbers)"),
    # no header row: a seed is never taken for a column's name
    ("bare.csv", "".join(f"{s},x\n" for s in SEEDS), "[*][0] (16 numbers)"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 16 else "")
def test_a_structured_file_without_select_is_refused_naming_the_paths_it_could_take(
        folder, capsys, guard, name, text, hint):
    (folder / name).write_text(text)
    code, out, err = run_cli("withheld", "build", "--values", name, "-o", "w.json", guard=guard)
    assert code == 2 and out == ""
    assert f"values file {name} is " in err and "--select" in err and hint in err
    assert not (folder / "w.json").exists()
    assert err.count("error:") == 1


def test_a_csv_header_is_named_only_over_a_column_of_numbers(folder, capsys, guard):
    (folder / "labels.csv").write_text("seed,label\n" + "".join(
        f"{s},Drone Answer Key {n}\n" for n, s in enumerate(SEEDS)))
    guard.patterns += LeakGuard(["Drone Answer Key"]).patterns
    code, _, err = run_cli("withheld", "build", "--values", "labels.csv", guard=guard)
    assert code == 2
    assert "seed (16 numbers)" in err and "column 2 by its name in the header row (16 texts)" in err


@pytest.mark.parametrize("name, expr, words", [
    ("seeds.yaml", "heldout.seedz[*]", "no key 'seedz' at heldout"),
    ("seeds.yaml", "heldout", "heldout (line 3) is a mapping, not a value"),
    ("seeds.yaml", "heldout.seeds", "heldout.seeds (line 4) is a list, not a value"),
    ("seeds.yaml", "heldout.seeds[16]", "heldout.seeds has 16 item(s), no [16]"),
    ("seeds.yaml", "heldout.seeds.first", "heldout.seeds is a list; take its items"),
    ("seeds.yaml", "heldout..seeds", "cannot read it at character 8"),
    ("seeds.yaml", "heldout[0]seeds", "cannot read it at character 11"),
    ("seeds.json", "heldout[*]", "heldout.seeds is a list, not a value"),
    ("seeds.toml", "heldout.seeds[0].x", "heldout.seeds[0] is a single value"),
    ("seeds.csv", "sead", "no key 'sead'"),
    ("seeds.csv", "[*][1]", "line 1 is a header row"),
])
def test_a_bad_select_exits_2_naming_the_file_and_the_path_never_a_value(
        folder, capsys, guard, name, expr, words):
    code, out, err = run_cli("withheld", "build", "--values", name, "--select", expr,
                         "-o", "w.json", guard=guard)
    assert code == 2 and out == ""
    assert name in err and words in err, err
    assert not (folder / "w.json").exists()


def test_a_selected_boolean_or_null_is_refused_by_its_path_and_line(folder, capsys, guard):
    (folder / "odd.yaml").write_text("heldout:\n  seeds:\n  - 61877402391\n  - true\n  - ~\n")
    code, _, err = run_cli("withheld", "build", "--values", "odd.yaml",
                       "--select", "heldout.seeds[*]", guard=guard)
    assert code == 2
    assert "heldout.seeds[1] (line 4) is a boolean, neither a number nor text" in err


def test_strings_stay_text_and_numbers_in_strings_are_numbers(folder, capsys, guard):
    (folder / "mixed.json").write_text(json.dumps(
        {"labels": ["Drone Answer Key"], "seeds": [str(USER_SEED)]}))
    guard.patterns += LeakGuard(["Drone Answer Key"]).patterns
    for expr, kind in (("labels[*]", "text"), ("seeds[0]", "number")):
        code, out, err = run_cli("withheld", "build", "--values", "mixed.json",
                             "--select", expr, guard=guard)
        assert code == 0, err
        assert [e["type"] for e in json.loads(out)["entries"]] == [kind]


def test_a_plain_text_file_stays_one_value_a_line_and_takes_no_select(folder, capsys, guard):
    (folder / "labels.txt").write_text("# labels\nDrone Answer Key\nheldout: not a mapping\n")
    guard.patterns += LeakGuard(["Drone Answer Key"]).patterns
    code, out, err = run_cli("withheld", "build", "--values", "labels.txt", guard=guard)
    assert code == 0, err
    assert [e["id"] for e in json.loads(out)["entries"]] == ["labels.txt:2", "labels.txt:3"]
    code, _, err = run_cli("withheld", "build", "--values", "labels.txt",
                       "--select", "[*]", guard=guard)
    assert code == 2 and "--select given" in err


def test_selects_pair_with_the_structured_files_in_order(folder, capsys, guard):
    code, out, err = run_cli("withheld", "build", "--values", "seeds.txt",
                         "--id-prefix", "plain", "--values", "seeds.csv", "--id-prefix", "csv",
                         "--values", "seeds.toml", "--id-prefix", "toml",
                         "--select", "seed", "--select", "heldout.seeds[0]", guard=guard)
    assert code == 0, err
    ids = [e["id"] for e in json.loads(out)["entries"]]
    assert ids[15:18] == ["plain:16", "csv:2", "csv:3"] and ids[-1] == "toml:heldout.seeds[0]"
    code, _, err = run_cli("withheld", "build", "--values", "seeds.csv",
                       "--select", "seed", "--select", "seed", guard=guard)
    assert code == 2 and "give it once per structured file" in err


def test_sealed_build_reads_structured_files_the_same_way(folder, capsys, guard):
    code, _, err = run_cli("sealed", "build", "--values", "seeds.toml", guard=guard)
    assert code == 2 and "heldout.seeds[*] (16 numbers)" in err
    code, out, err = run_cli("sealed", "build", "--values", "seeds.toml",
                         "--select", "heldout.seeds[*]", guard=guard)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "plimsoll-sealed/1"
    assert {e["type"] for e in doc["entries"]} == {"number"}


@pytest.mark.parametrize("name, text, words", [
    # a billion laughs: nine levels of aliases, each ten of the one before
    ("laughs.yaml", "a: &a [1,2,3,4,5,6,7,8,9,10]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)), "past 2,000,000 values"),
    ("deep.json", "[" * 100 + "1" + "]" * 100, "nested deeper than 64 levels"),
    ("deeper.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("bad.yaml", "heldout:\n  seeds: [1, 2\n", "values file bad.yaml line 3: "),
    ("deeper.yaml", "[" * 1_000_000, "deeper.yaml line 1: nested more than 64 levels deep"),
    ("bad.json", '{"seeds": [1, 2,]}', "not valid JSON at line 1 column 17"),
    ("bad.toml", "seeds = [1, 2\n", "not valid TOML"),
    ("twice.yaml", "heldout:\n  seeds: [1]\nheldout:\n  seeds: [2]\n",
     "twice.yaml line 3: a key given twice"),
    ("twice.json", '{"seeds": [1], "seeds": [2]}', "twice.json: a key given twice"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 16 else "")
def test_a_hostile_or_broken_structured_file_is_refused_within_its_bounds(
        folder, capsys, guard, name, text, words):
    (folder / name).write_text(text)
    code, _, err = run_cli("withheld", "build", "--values", name, "--select", "[*]", guard=guard)
    assert code == 2 and words in err, err
    assert "Traceback" not in err


def test_a_values_file_over_the_bound_is_refused_before_it_is_parsed(folder, capsys, guard,
                                                                      monkeypatch):
    monkeypatch.setattr(valuefiles, "VALUES_BOUND", 100)
    code, _, err = run_cli("withheld", "build", "--values", "seeds.yaml",
                       "--select", "heldout.seeds[*]", guard=guard)
    assert code == 2 and "values file seeds.yaml" in err and "over the bound of 100 bytes" in err
