"""`plimsoll-ci seeds lint`: the write-up's weak seeds are flagged by line and reason, never shown;
a drawn set passes; `withheld build --values` warns with the same lint."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.cli import run_cli
from kit.scan import LeakGuard

import plimsoll_sim as sim
from plimsoll_ci.grading import fresh, seedlint


def write(path: Path, seeds) -> Path:
    path.write_text("".join(f"{s}\n" for s in seeds))
    return path


def lint_set(name: str, role: str, seeds) -> seedlint.LintSet:
    return seedlint.LintSet(name, role, tuple(
        seedlint.SeedAt(f"{name}:{n}", s) for n, s in enumerate(seeds, 1)))


CASES = [
    # the write-up's smoke seeds, "the first numbers anyone would try"
    ("smoke-101-104", "smoke", range(101, 105), {"hunt", "guessable", "run", "low-entropy",
                                                 "neighbours"}),
    ("one-to-sixteen", "held-out", range(1, 17), {"hunt", "guessable", "run", "low-entropy",
                                                  "neighbours"}),
    ("a-date", "held-out", [20261025], {"hunt", "guessable", "too-small"}),
    # held-out seeds below 900 million, in a row: a hunt counting up from zero meets them
    ("below-900-million", "held-out", range(800_000_000, 800_000_016),
     {"hunt", "guessable", "run", "low-entropy", "neighbours"}),
    ("evenly-spaced", "fresh", [6_151_209_871 + 7_919 * k for k in range(16)],
     {"run", "low-entropy"}),
    ("too-few", "held-out", fresh.draw(4).seeds, {"too-small"}),
]


@pytest.mark.parametrize("name, role, seeds, rules", CASES, ids=[c[0] for c in CASES])
def test_lint_flags_the_write_ups_weak_sets_by_line_and_reason_never_the_seed(
        tmp_path, name, role, seeds, rules):
    path = write(tmp_path / f"{name}.txt", seeds)
    r = run_cli("seeds", "lint", f"{role}={path}")
    assert r.returncode == 1, r.stdout + r.stderr
    found = {f.rule for f in seedlint.lint([lint_set(str(path), role, list(seeds))])}
    assert found == rules
    for rule in rules:
        assert f" {rule}: " in r.stdout
    # a per-seed finding names its line; the way out is named on each line
    assert (f"{path}:1" in r.stdout) == bool(rules - {"too-small", "low-entropy"})
    assert all("plimsoll-ci seeds draw" in x for x in r.stdout.splitlines())
    guard = LeakGuard([str(s) for s in seeds if s > 1000])  # small numbers are line numbers too
    guard.text(r.stdout + r.stderr)


def test_a_set_shared_between_practice_and_fresh_is_flagged_on_the_later_set(tmp_path):
    drawn = fresh.draw(32).seeds
    practice = write(tmp_path / "practice.txt", drawn[:16])
    fresh_file = write(tmp_path / "fresh.txt", [*drawn[10:12], *fresh.draw(14).seeds])
    r = run_cli("seeds", "lint", f"practice={practice}", f"fresh={fresh_file}")
    assert r.returncode == 1
    shared = [x for x in r.stdout.splitlines() if ": shared: " in x]
    assert [x.split(":")[1] for x in shared] == ["1", "2"]
    assert all(x.startswith(str(fresh_file)) and f"practice set {practice}" in x for x in shared)
    LeakGuard([str(s) for s in drawn]).text(r.stdout + r.stderr)


def test_a_drawn_64_bit_set_passes(tmp_path):
    assert run_cli("seeds", "draw", "64", "-o", str(tmp_path / "held.json")).returncode == 0
    r = run_cli("seeds", "lint", str(tmp_path / "held.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "" and "64 seeds in 1 set(s): no finding" in r.stderr
    # and so do a hundred more draws, by the library: a draw never gives the lint a finding
    for _ in range(100):
        s = lint_set("d", "held-out", fresh.draw(16).seeds)
        assert seedlint.lint([s]) == []


def test_the_horizon_can_be_set(tmp_path):
    path = write(tmp_path / "practice.txt", sim.PRACTICE_SEEDS)
    default = run_cli("seeds", "lint", f"practice={path}")
    assert default.returncode == 1 and ": hunt: " in default.stdout  # some are below 2**32
    assert run_cli("seeds", "lint", "--horizon", "2**30", f"practice={path}").returncode == 0
    wider = run_cli("seeds", "lint", "--horizon", "2^40", f"practice={path}")
    assert wider.stdout.count(": hunt: ") == 16 and "(2^40)" in wider.stdout


@pytest.mark.parametrize("seed, why", [
    (0, "0-1000"), (1000, "0-1000"), (7777777777, "repeated"), (123123123123, "repeated"),
    (0xABABABABABAB, "repeated"), (5_000_000_000, "round"), (2**40, "round"),
    (2**31 - 1, "round"), (20261025, "date"), (25102026, "date"), (10252026, "date"),
    (202610251230, "date"), (20261025123000, "date"), (1234567890, "digits"),
    (9876543210, "digits"), (3141592653, "famous"), (0xDEADBEEF, "famous"),
    (0x5EEDD20EC0A57E4B, "famous"), (2718281828, "famous"),
    (11813342244888411413, None), (5830142297, None), (20261325, None),
])
def test_guessable_names_the_pattern(seed, why):
    got = seedlint.guessable(seed)
    assert (got is None) if why is None else (why in got)


def test_a_seed_near_the_top_of_the_range_is_met_by_a_hunt_counting_down():
    assert [r for r, _ in seedlint.seed_reasons(2**64 - 5)] == ["hunt"]
    assert seedlint.seed_reasons(2**63 + 12_345_678_901) == []


def test_duplicates_and_neighbours_within_a_set_are_flagged():
    s = lint_set("h", "held-out", [*fresh.draw(15).seeds, 0])
    base = s.seeds[3].value
    dup = s._replace(seeds=(*s.seeds[:15], seedlint.SeedAt("h:16", base)))
    assert [(f.where, f.rule) for f in seedlint.lint([dup])] == [("h:16", "duplicate")]
    near = s._replace(seeds=(*s.seeds[:15], seedlint.SeedAt("h:16", base + 4)))
    assert [(f.where, f.rule) for f in seedlint.lint([near])] == [("h:16", "neighbours")]


def test_lint_reads_a_seed_file_with_lists_and_comments_as_grade_does(tmp_path):
    path = tmp_path / "held.txt"
    path.write_text("# held out\n\n101-103  # smoke, really\n")
    r = run_cli("seeds", "lint", str(path))
    assert r.returncode == 1
    [line] = [x for x in r.stdout.splitlines() if x.startswith(f"{path}:3: ")]
    assert "hunt: " in line and "run: 3 consecutive" in line


@pytest.mark.parametrize("args, message", [
    (["{tmp}/missing.txt"], "missing.txt: cannot read"),
    (["{tmp}/bad.txt"], "line 2"),
    (["{tmp}/set.commit"], "that is a commitment"),
    (["--horizon", "lots", "{tmp}/good.txt"], "argument --horizon: 'lots': give 2**K"),
    (["--horizon", "1", "{tmp}/good.txt"], "argument --horizon: '1': give 2**K"),
])
def test_bad_input_exits_2_naming_the_file_and_what_to_do(tmp_path, args, message):
    write(tmp_path / "good.txt", fresh.draw(16).seeds)
    (tmp_path / "bad.txt").write_text("12345678901\nseven\n")
    assert run_cli("seeds", "draw", "4", "-o", str(tmp_path / "set.json")).returncode == 0
    assert run_cli("seeds", "commit", str(tmp_path / "set.json"), "-o",
               str(tmp_path / "set.commit")).returncode == 0
    r = run_cli("seeds", "lint", *[a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and r.stderr.count("error:") == 1


def test_withheld_build_runs_the_same_lint_over_its_values_and_warns(tmp_path):
    values = write(tmp_path / "seeds.txt", [101, 102, 103, 104])
    r = run_cli("withheld", "build", "--values", str(values), "-o", str(tmp_path / "w.json"))
    assert r.returncode == 0, r.stderr
    warned = [x for x in r.stderr.splitlines() if "seed lint:" in x]
    assert any(f"{values.name}:1: guessable" in x for x in warned)  # ids name the base name
    assert any(f"{values.name}:1-4: run" in x for x in warned)
    assert not any("too-small" in x for x in warned)  # a withheld set has no size to keep
    clean = write(tmp_path / "drawn.txt", fresh.draw(3).seeds)
    r = run_cli("withheld", "build", "--values", str(clean), "-o", str(tmp_path / "k.json"))
    assert "seed lint" not in r.stderr


YAML_SEEDS = [800_000_000 + k for k in range(16)]  # below 900 million, in a row: the write-up's


def test_lint_reads_a_yaml_seed_file_with_select_naming_each_place_never_the_seed(tmp_path):
    path = tmp_path / "seeds.yaml"
    path.write_text("heldout:\n  seeds:\n" + "".join(f"  - {s}\n" for s in YAML_SEEDS))
    r = run_cli("seeds", "lint", f"held-out={path}", "--select", "heldout.seeds[*]")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{path}:heldout.seeds[0]: hunt: " in r.stdout and " run: 16 consecutive" in r.stdout
    LeakGuard([str(s) for s in YAML_SEEDS]).text(r.stdout + r.stderr)


@pytest.mark.parametrize("name, text, args, words", [
    ("seeds.yaml", "heldout:\n  seeds: [48213377123, 61877402391]\n", [],
     "heldout.seeds[*] (2 numbers)"),
    ("seeds.csv", "seed\n48213377123\n61877402391\n", [], "seed (2 numbers)"),
    ("seeds.json", '{"seeds": [48213377123, "a label"]}', ["--select", "seeds[*]"],
     "seeds[1] is not a seed"),
    ("seeds.txt", "48213377123\n", ["--select", "[*]"], "--select given 1 time(s) for 0"),
])
def test_lint_refuses_a_structured_seed_file_without_a_good_select(tmp_path, name, text, args,
                                                                   words):
    path = tmp_path / name
    path.write_text(text)
    r = run_cli("seeds", "lint", str(path), *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert words in r.stderr and r.stderr.count("error:") == 1
    LeakGuard(["48213377123", "61877402391", "a label"]).text(r.stdout + r.stderr)
