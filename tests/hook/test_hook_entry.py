"""The hook entry points, run as pre-commit runs them (`plimsoll-ci hook ...` at the repo root)."""

from __future__ import annotations

import json
from pathlib import Path

from kit.harness_repo import (
    KEY,
    PRACTICE,
    SEED,
    commit,
    fix,
    git,
    hook_env,
    leak,
    make_harness,
    repo_cli,
)


def test_ship_scan_refuses_a_staged_viewer_naming_a_practice_seed(harness: Path) -> None:
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "viewer/replay.html:1:" in r.stdout
    assert "seeds.txt:2" in r.stdout
    assert "drone:viewer/replay.html" in r.stdout  # the builder's output carries it too
    assert SEED not in r.stdout + r.stderr


def test_ship_scan_passes_when_no_changed_file_can_change_what_ships(harness: Path) -> None:
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    # README is neither shipped, nor the config, nor the set, nor a builder input.
    cfg = (harness / "plimsoll.yaml").read_text().replace(
        'inputs: ["loop/**", "viewer/**", "tasks/**"]', 'inputs: ["loop/**"]')
    (harness / "plimsoll.yaml").write_text(cfg)
    git(harness, "add", "plimsoll.yaml")
    r = repo_cli(harness, "hook", "ship-scan", "README.md")
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    # ...but a change to the config itself triggers the full scan.
    r = repo_cli(harness, "hook", "ship-scan", "plimsoll.yaml")
    assert r.returncode == 1 and "seeds.txt:2" in r.stdout


def test_ship_scan_without_filenames_scans_everything(harness: Path) -> None:
    leak(harness)
    git(harness, "add", "-A")
    commit(harness, "leak committed without the hook")
    r = repo_cli(harness, "hook", "ship-scan")
    assert r.returncode == 1 and "viewer/replay.html" in r.stdout


def test_ship_scan_judges_the_index_not_the_working_tree(harness: Path) -> None:
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    fix(harness)  # working tree clean, index leaks
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 1, r.stdout
    git(harness, "add", "viewer/replay.html")
    leak(harness)  # index clean, working tree leaks
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 0, r.stdout


def test_ship_scan_never_passes_by_scanning_nothing(harness: Path) -> None:
    cfg = (harness / "plimsoll.yaml").read_text().replace('"viewer/**", "tasks/**"]\n    exclude',
                                                         '"vewer/**"]\n    exclude')
    (harness / "plimsoll.yaml").write_text(cfg)
    git(harness, "add", "plimsoll.yaml")
    r = repo_cli(harness, "hook", "ship-scan", "plimsoll.yaml")
    assert r.returncode == 2
    assert "ship set viewer ships no files" in r.stderr


def test_ship_scan_without_the_key_is_bad_input_not_a_pass(harness: Path) -> None:
    env = hook_env()
    del env["PLIMSOLL_WITHHELD_KEY"]
    r = repo_cli(harness, "hook", "ship-scan", env=env)
    assert r.returncode == 2 and "PLIMSOLL_WITHHELD_KEY" in r.stderr
    r = repo_cli(harness, "hook", "ship-scan", env=hook_env(PLIMSOLL_WITHHELD_KEY="wrong"))
    assert r.returncode == 2 and "wrong key" in r.stderr


def test_ship_scan_in_warn_mode_reports_and_passes(harness: Path) -> None:
    leak(harness)
    (harness / "plimsoll.yaml").write_text("mode: warn\n" + (harness / "plimsoll.yaml").read_text())
    git(harness, "add", "-A")
    r = repo_cli(harness, "hook", "ship-scan")
    assert r.returncode == 0 and "seeds.txt:2" in r.stdout and "mode is warn" in r.stdout


def test_a_failing_builder_stops_the_hook_with_its_exit_code(harness: Path) -> None:
    (harness / "loop/kit.py").write_text("import sys\nprint('kit: gates missing')\nsys.exit(7)\n")
    git(harness, "add", "loop/kit.py")
    r = repo_cli(harness, "hook", "ship-scan", "loop/kit.py")
    assert r.returncode == 7
    assert "ship set drone: builder exited with code 7" in r.stderr
    assert "kit: gates missing" in r.stderr


def test_the_builder_runs_in_a_checkout_of_the_index_not_the_working_tree(harness: Path) -> None:
    probe = ("import os, sys\nfrom pathlib import Path\n"
             "Path(sys.argv[1], 'cwd.txt').write_text(os.getcwd())\n"
             "Path('touched-by-builder').write_text('x')\n"
             "Path(sys.argv[1], 'replay.html').write_text(Path('viewer/replay.html').read_text())\n")
    (harness / "loop/kit.py").write_text(probe)
    leak(harness)
    git(harness, "add", "-A")
    fix(harness)
    r = repo_cli(harness, "ship", "list", "--staged", "--set", "drone", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert not (harness / "touched-by-builder").exists()
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 1 and "drone:replay.html" in r.stdout


def test_pre_push_scans_every_pushed_commit_and_names_the_leaking_one(harness: Path) -> None:
    base = git(harness, "rev-parse", "HEAD")
    leak(harness)
    git(harness, "add", "-A")
    middle = commit(harness, "viewer example link")
    fix(harness)
    git(harness, "add", "-A")
    tip = commit(harness, "rename the example")
    env = hook_env(PRE_COMMIT_FROM_REF=base, PRE_COMMIT_TO_REF=tip)
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"commit {middle[:12]} viewer example link" in r.stdout
    assert tip[:12] not in r.stdout
    assert SEED not in r.stdout
    env = hook_env(PRE_COMMIT_FROM_REF=middle, PRE_COMMIT_TO_REF=tip)
    assert repo_cli(harness, "hook", "ship-scan", env=env).returncode == 0


def test_a_cached_clean_verdict_does_not_survive_a_new_withheld_set(harness: Path) -> None:
    from plimsoll_ci import withheld

    (harness / "viewer/app.mjs").write_text("export const speed = 2; // 424242424242\n")
    git(harness, "add", "-A")
    assert repo_cli(harness, "hook", "ship-scan").returncode == 0
    cache = list((harness / ".git/plimsoll").glob("clean-*"))
    assert cache, "the clean verdicts are remembered under .git/plimsoll"
    doc, _ = withheld.build_set(values=[("extra.txt:1", "424242424242")], key=KEY.encode())
    (harness / "withheld.json").write_text(withheld.dumps(doc))
    r = repo_cli(harness, "hook", "ship-scan", "withheld.json")
    assert r.returncode == 1 and "extra.txt:1" in r.stdout


def test_a_tampered_cache_line_cannot_hide_a_new_leak(harness: Path) -> None:
    assert repo_cli(harness, "hook", "ship-scan").returncode == 0
    leak(harness)
    git(harness, "add", "-A")
    # The leaking blob has a new id, so no earlier verdict applies to it.
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 1


def test_withheld_guard_refuses_an_unkeyed_set_of_guessable_seeds(tmp_path: Path) -> None:
    from plimsoll_ci import withheld

    repo = make_harness(tmp_path)
    doc, _ = withheld.build_set(values=[(f"seeds.txt:{i}", v) for i, v in enumerate(PRACTICE, 1)])
    (repo / "withheld.json").write_text(withheld.dumps(doc))
    (repo / "plimsoll.yaml").write_text((repo / "plimsoll.yaml").read_text().replace(
        "key: {env: PLIMSOLL_WITHHELD_KEY}\n", ""))
    git(repo, "add", "-A")
    r = repo_cli(repo, "hook", "withheld-guard", "withheld.json")
    assert r.returncode == 1
    assert "withheld.json: an unkeyed withheld set with 16 guessable value(s)" in r.stdout
    assert not any(v in r.stdout for v in PRACTICE)


def test_withheld_guard_passes_a_keyed_set(harness: Path) -> None:
    r = repo_cli(harness, "hook", "withheld-guard", "withheld.json", "plimsoll.yaml")
    assert r.returncode == 0, r.stdout + r.stderr


def test_withheld_guard_refuses_the_seeds_file_the_set_was_built_from(harness: Path) -> None:
    (harness / "data").mkdir()
    (harness / "data/practice.txt").write_text("# practice seeds\n" + "\n".join(PRACTICE) + "\n")
    (harness / "data/other.txt").write_text("speed 2\nseed list moved elsewhere\n")
    git(harness, "add", "-A")
    r = repo_cli(harness, "hook", "withheld-guard", "data/practice.txt", "data/other.txt")
    assert r.returncode == 1
    assert "data/practice.txt: 16 of its 16 lines are values of the withheld set" in r.stdout
    assert "other.txt" not in r.stdout
    assert not any(v in r.stdout for v in PRACTICE)


def test_hook_outside_a_repository_or_without_config_is_bad_input(tmp_path: Path) -> None:
    r = repo_cli(tmp_path, "hook", "ship-scan")
    assert r.returncode == 2 and "not inside a git repository" in r.stderr
    git(tmp_path, "init", "-q")
    r = repo_cli(tmp_path, "hook", "ship-scan")
    assert r.returncode == 2 and "no plimsoll.yaml" in r.stderr


def test_ship_list_json_names_every_shipped_file(harness: Path) -> None:
    r = repo_cli(harness, "ship", "list", "--staged", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    shipped = {(f["set"], f["path"]) for f in doc["files"]}
    assert ("viewer", "viewer/replay.html") in shipped
    assert ("viewer", "viewer/app.test.mjs") not in shipped
    assert ("drone", "tasks/drone/TASK.md") in shipped
    assert not any(p.startswith("loop/") or p == "withheld.json" for _, p in shipped)


def test_the_remembered_config_is_the_config(harness: Path, own_cache: Path) -> None:
    from plimsoll_ci.shipscan import configmemo, hook, ship, shipconfig

    text = ("withheld: withheld.json\nmode: warn\nlimits: {max_members: 10}\nship:\n"
            "  a: {command: [python3, kit.py, '{out}'], inputs: ['loop/**'], timeout: 5}\n"
            "  b: {root: viewer, include: ['*.html'], exclude: ['x/']}\n")
    declared = shipconfig.declare(text, "plimsoll.yaml")
    doc = json.loads(json.dumps(configmemo._declared_doc(declared)))
    assert configmemo._declared_from_doc(doc) == declared
    assert shipconfig.anchor(declared, "plimsoll.yaml", harness) == \
        ship.parse_config(text, "plimsoll.yaml", harness)
    path = harness / "plimsoll.yaml"
    staged = hook.staged_config(harness, path)  # parsed, then remembered
    assert hook.staged_config(harness, path) == staged == ship.config_at(harness, path, ":")
    assert list((own_cache / "configs").glob("config-*.json"))


def test_the_remembered_config_follows_the_staged_version_not_the_working_tree(
        harness: Path) -> None:
    from plimsoll_ci.shipscan import hook

    path = harness / "plimsoll.yaml"
    first = hook.staged_config(harness, path)
    assert first.ship["viewer"].exclude == ("**/*.test.mjs",)
    path.write_text(path.read_text().replace('"**/*.test.mjs"', '"**/*.spec.mjs"'))
    assert hook.staged_config(harness, path) == first  # edited, not staged: the staged one
    git(harness, "add", "plimsoll.yaml")
    assert hook.staged_config(harness, path).ship["viewer"].exclude == ("**/*.spec.mjs",)
    git(harness, "reset", "-q", "plimsoll.yaml")  # back to the first: remembered, the same
    assert hook.staged_config(harness, path) == first


def test_a_withheld_set_with_no_entries_is_bad_input_in_the_hook(harness: Path) -> None:
    from plimsoll_ci import withheld

    doc, _ = withheld.build_set(values=[], key=KEY.encode())
    (harness / "withheld.json").write_text(withheld.dumps(doc))
    git(harness, "add", "-A")
    r = repo_cli(harness, "hook", "ship-scan")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "withheld.json has no entries" in r.stderr and "withholds nothing" in r.stderr


def test_a_key_given_for_an_unkeyed_set_is_said_by_the_hook(harness: Path) -> None:
    from plimsoll_ci import withheld

    doc, _ = withheld.build_set(values=[("seeds.txt:2", SEED)])
    (harness / "withheld.json").write_text(withheld.dumps(doc))
    git(harness, "add", "-A")
    r = repo_cli(harness, "hook", "ship-scan")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "is not keyed" in r.stdout + r.stderr and "key given is not used" in r.stdout + r.stderr
    assert KEY not in r.stdout + r.stderr


def test_the_commit_refusal_says_nothing_left_the_machine(harness: Path) -> None:
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 1
    assert "nothing was committed and nothing left this machine" in r.stdout
    assert "rotate" not in r.stdout and "git history" not in r.stdout


def test_the_push_refusal_says_nothing_was_pushed_and_how_to_rewrite(harness: Path) -> None:
    base = git(harness, "rev-parse", "HEAD")
    leak(harness)
    git(harness, "add", "-A")
    tip = commit(harness, "viewer example link")
    r = repo_cli(harness, "hook", "ship-scan",
                env=hook_env(PRE_COMMIT_FROM_REF=base, PRE_COMMIT_TO_REF=tip))
    assert r.returncode == 1
    assert "nothing was pushed" in r.stdout and "git rebase -i" in r.stdout
    assert "git filter-repo" in r.stdout  # the tool for many commits, or a file in every one
    assert r.stdout.count("nothing was pushed") == 1  # said once, after every commit's findings


def test_each_stage_says_what_the_docs_say_it_says() -> None:
    from plimsoll_ci.shipscan import report

    doc = (Path(__file__).resolve().parents[2] / "docs" / "when-it-fires.md").read_text()
    flat = " ".join(doc.split())
    for stage, text in report.STAGE_ADVICE.items():
        assert " ".join(text.split()) in flat, stage


def test_the_guard_counts_lines_that_are_values_not_lines_that_contain_one(harness: Path) -> None:
    (harness / "viewer/one.html").write_text(f'<a href="seed-{SEED}.json">replay</a>\n')
    (harness / "viewer/list.txt").write_text(f"{SEED}\n{PRACTICE[0]}\n")
    (harness / "viewer/mixed.txt").write_text(f"see {SEED}\nsee {PRACTICE[0]}\n")
    git(harness, "add", "-A")
    r = repo_cli(harness, "hook", "withheld-guard", "viewer/one.html", "viewer/list.txt",
                "viewer/mixed.txt")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "viewer/list.txt: 2 of its 2 lines are values" in r.stdout
    assert "one.html" not in r.stdout and "mixed.txt" not in r.stdout


def test_the_guard_survives_a_staged_file_nested_100000_deep(harness: Path) -> None:
    deep = '{"format": "plimsoll-withheld/1", "entries": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (harness / "viewer/deep.json").write_text(deep)
    git(harness, "add", "-A")
    r = repo_cli(harness, "hook", "withheld-guard", "viewer/deep.json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_the_guard_survives_a_staged_set_whose_entries_or_shapes_are_not_lists_or_objects(
        harness: Path) -> None:
    for n, (entries, shape) in enumerate([("5", "{}"), ("null", "{}"), ("[]", "[]"),
                                          ('{"a": 1}', "{}"), ("[1, \"x\"]", "{}"),
                                          ('[{"kind": "value", "type": "number", "shape": S}]',
                                           "[1]")]):
        doc = ('{"format": "plimsoll-withheld/1", "scheme": "sha256", "entries": '
               + entries.replace("S", shape) + "}")
        (harness / f"viewer/odd{n}.json").write_text(doc)
    git(harness, "add", "-A")
    r = repo_cli(harness, "hook", "withheld-guard", *(f"viewer/odd{n}.json" for n in range(6)))
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stdout + r.stderr  # the one value entry: no shape, guessable
    assert r.stdout.count("an unkeyed withheld set") == 1 and "odd5.json" in r.stdout
