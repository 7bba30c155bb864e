"""`plimsoll-ci init` sets a YAML-seeded harness up: config, keyed set, key outside, hooks,
workflow; asks nothing in CI; writes nothing when it cannot finish; never prints a value."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from plimsoll_ci.cli import main

SEEDS = ["48213377123", "91827364501", "73519046283", "62048153979"]


def make_harness(root: Path, seeds_text: str | None = None) -> Path:
    """A git repository with held-out seeds in YAML and two folders an agent is handed."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "heldout").mkdir()
    (root / "heldout" / "seeds.yaml").write_text(
        seeds_text or "heldout:\n  seeds:\n" + "".join(f"    - {s}\n" for s in SEEDS))
    (root / "task").mkdir()
    (root / "task" / "README.md").write_text("Fly the drone to the pad.\n")
    (root / "viewer").mkdir()
    (root / "viewer" / "index.html").write_text("<p>replays</p>\n")
    return root


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where init keeps keys for this test (outside every repository it sets up)."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setenv("CI", "true")  # asks nothing
    return home / "plimsoll" / "keys"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["init", *args])
    out, err = capsys.readouterr()
    for seed in SEEDS:
        assert seed not in out + err
    return code, out, err


def test_init_sets_a_yaml_seeded_harness_up_and_its_scan_finds_a_leak(
        tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_harness(tmp_path / "harness")
    code, out, err = run(capsys, str(repo))
    assert code == 0, err
    config = yaml.safe_load((repo / "plimsoll.yaml").read_text())
    assert config["withheld"] == "withheld.json"
    assert set(config["ship"]) == {"task", "viewer"}
    key_file = Path(config["key"]["file"])
    assert key_file == keys / "harness.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert not key_file.resolve().is_relative_to(repo.resolve())
    doc = (repo / "withheld.json").read_text()
    assert '"scheme": "hmac-sha256"' in doc
    assert all(s not in doc for s in SEEDS)
    assert doc.count('"type": "number"') == len(SEEDS)  # numbers stay numbers
    assert "/heldout/seeds.yaml" in (repo / ".gitignore").read_text().splitlines()
    hooks = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())
    [entry] = hooks["repos"]
    assert entry["rev"].startswith("v") and {h["id"] for h in entry["hooks"]} == {
        "plimsoll-ship-scan", "plimsoll-withheld-guard"}
    flow = yaml.safe_load((repo / ".github/workflows/plimsoll-ship-scan.yml").read_text())
    [step] = [s for s in flow["jobs"]["ship-scan"]["steps"] if "ship-scan@" in s.get("uses", "")]
    assert "secrets.PLIMSOLL_WITHHELD_KEY" in step["with"]["key"]
    assert out.splitlines()[-4] == "next:" and len(out.splitlines()[-3:]) == 3
    # the set works: a seed written in hex in a shipped file is found
    (repo / "viewer" / "index.html").write_text(f"<a href='seed-{int(SEEDS[1]):#x}.json'>x</a>\n")
    monkeypatch.chdir(repo)
    assert main(["scan", "--config", "plimsoll.yaml"]) == 1
    out, _ = capsys.readouterr()
    assert "heldout/seeds.yaml:heldout.seeds[1]" in out


def test_init_refuses_a_second_run_and_writes_nothing(tmp_path: Path, keys: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_harness(tmp_path / "h")
    assert run(capsys, str(repo))[0] == 0
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git/" not in str(p)}
    code, _, err = run(capsys, str(repo))
    assert code == 2 and "already there" in err and "nothing written" in err
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert after == before


def test_init_reuses_an_existing_key_and_never_overwrites_it(
        tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys.mkdir(parents=True)
    (keys / "h.key").write_text("kept-key-of-this-maintainer\n")
    repo = make_harness(tmp_path / "h")
    code, out, _ = run(capsys, str(repo))
    assert code == 0 and "reused" in out
    assert (keys / "h.key").read_text() == "kept-key-of-this-maintainer\n"


def test_init_refuses_a_key_file_inside_the_repository(tmp_path: Path, keys: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_harness(tmp_path / "h")
    code, _, err = run(capsys, str(repo), "--key-file", str(repo / "key.txt"))
    assert code == 2 and "inside the repository" in err
    assert not (repo / "key.txt").exists() and not (repo / "plimsoll.yaml").exists()


def test_init_in_ci_names_the_flag_it_needs_for_a_file_with_two_value_lists(
        tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ("heldout:\n  seeds: [" + ", ".join(SEEDS[:2]) + "]\n  labels: ["
            + ", ".join(SEEDS[2:]) + "]\n")
    repo = make_harness(tmp_path / "h", text)
    code, _, err = run(capsys, str(repo))
    assert code == 2 and "--select" in err and "heldout.seeds[*]" in err
    assert not (repo / "plimsoll.yaml").exists() and not (repo / "withheld.json").exists()
    code, _, err = run(capsys, str(repo), "--select", "heldout.seeds[*]")
    assert code == 0, err
    assert (repo / "withheld.json").read_text().count('"kind": "value"') == 2


def test_init_without_a_likely_values_file_asks_for_values(tmp_path: Path, keys: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    repo = make_harness(tmp_path / "h")
    (repo / "heldout" / "seeds.yaml").rename(repo / "numbers.yaml")
    (repo / "heldout").rmdir()
    code, _, err = run(capsys, str(repo))
    assert code == 2 and "--values FILE" in err
    code, _, err = run(capsys, str(repo), "--values", "numbers.yaml", "--ship", "t=task/**")
    assert code == 0, err
    assert set(yaml.safe_load((repo / "plimsoll.yaml").read_text())["ship"]) == {"t"}


def test_init_adds_its_hooks_to_an_existing_pre_commit_config(
        tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_harness(tmp_path / "h")
    (repo / ".pre-commit-config.yaml").write_text(
        "# ours\nrepos:\n- repo: https://github.com/psf/black\n  rev: 24.1.0\n  hooks:\n"
        "  - id: black\n")
    assert run(capsys, str(repo))[0] == 0
    hooks = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())
    assert [r["repo"].rsplit("/", 1)[-1] for r in hooks["repos"]] == ["plimsoll-ci", "black"]
    assert (repo / ".pre-commit-config.yaml").read_text().startswith("# ours\n")


@pytest.mark.parametrize("bad", ["task", "=task/**", "task="])
def test_init_refuses_a_malformed_ship_flag(tmp_path: Path, keys: Path, bad: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_harness(tmp_path / "h")
    code, _, err = run(capsys, str(repo), "--ship", bad)
    assert code == 2 and "NAME=GLOB" in err
    assert not (repo / "plimsoll.yaml").exists()


def test_init_outside_a_git_repository_is_refused(tmp_path: Path, keys: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    code, _, err = run(capsys, str(tmp_path / "plain"))
    assert code == 2 and err


def test_the_workflow_init_writes_validates_against_the_github_workflow_schema(
        tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    repo = make_harness(tmp_path / "h")
    assert run(capsys, str(repo))[0] == 0
    r = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                        "vendor.github-workflows",
                        str(repo / ".github/workflows/plimsoll-ship-scan.yml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_init_json_names_what_it_wrote_and_where_the_key_is_never_the_key(
        tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    repo = make_harness(tmp_path / "h")
    code, out, _ = run(capsys, str(repo), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc["written"]) == {"withheld.json", "plimsoll.yaml", ".pre-commit-config.yaml",
                                   ".github/workflows/plimsoll-ship-scan.yml"}
    assert doc["extended"] == [".gitignore"] and doc["entries"] == len(SEEDS)
    assert Path(doc["key_file"]) == keys / "h.key" and doc["key_reused"] is False
    assert (keys / "h.key").read_text().strip() not in out


def test_init_help_names_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["init", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert all(f in out for f in ("--values", "--select", "--ship", "--key-file", "--format"))
