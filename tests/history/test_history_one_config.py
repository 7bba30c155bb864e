"""One config, read everywhere: `history` (and `scan PATH`) take the withheld set and its key
from plimsoll.yaml without `--config`; the set's flag is `--withheld` on every command (the old
names still work, with one deprecation line); a missing key names the config that was read."""

from __future__ import annotations

import json
from pathlib import Path

from kit.history import LEAK, SEEDS, GitRepo, checked_cli, viewer

KEY = "history-test-key-not-a-secret"


def _keyed_harness(tmp_path: Path, key_line: str | None) -> GitRepo:
    """A glob harness whose keyed set is committed beside plimsoll.yaml; the key lives outside
    the repository (`key_line` is the config's `key:` line, None for none)."""
    from plimsoll_ci import withheld

    keyfile = tmp_path / "private" / "key"
    keyfile.parent.mkdir()
    keyfile.write_text(KEY + "\n")
    repo = GitRepo(tmp_path / "harness")
    doc, _ = withheld.build_set(values=[(f"seeds.txt:{i}", s) for i, s in enumerate(SEEDS, 1)],
                                key=KEY.encode())
    repo.write("withheld.json", withheld.dumps(doc))
    key = "" if key_line is None else key_line.format(keyfile=keyfile) + "\n"
    repo.write("plimsoll.yaml", f"withheld: withheld.json\n{key}ship:\n  task:\n"
                                "    include: [\"viewer/**\"]\n")
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    repo.commit("harness", 0)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("viewer: an example link", 10)
    return repo


def test_history_reads_the_keyed_set_and_its_key_from_plimsoll_yaml_without_config(
        tmp_path: Path) -> None:
    repo = _keyed_harness(tmp_path, "key: {{file: {keyfile}}}")
    proc = checked_cli("history", "--format", "json", "--no-progress", cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    (entry,) = json.loads(proc.stdout)["entries"]
    assert entry["entry"] == "seeds.txt:2"
    assert entry["first"]["findings"][0]["via"] == ["plain"]
    assert proc.stderr == ""


def test_history_takes_the_key_from_plimsoll_yaml_for_a_set_given_by_flag(
        tmp_path: Path) -> None:
    repo = _keyed_harness(tmp_path, "key: {{file: {keyfile}}}")
    proc = checked_cli("history", "--withheld", "withheld.json", "--no-progress", cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    assert "seeds.txt:2: shipped" in proc.stdout


def test_a_missing_key_names_the_config_that_was_read(tmp_path: Path) -> None:
    repo = _keyed_harness(tmp_path, None)
    proc = checked_cli("history", "--no-progress", cwd=repo.path)
    assert proc.returncode == 2
    config = (repo.path / "plimsoll.yaml").resolve()
    assert f"{config} (read) names no key: add `key: {{env: VAR}}`" in proc.stderr
    assert "is keyed (key id" in proc.stderr


def test_a_missing_key_without_any_config_says_none_was_found(tmp_path: Path) -> None:
    repo = _keyed_harness(tmp_path, None)
    (repo.path / "plimsoll.yaml").unlink()
    proc = checked_cli("history", "--withheld", "withheld.json", "--no-progress", cwd=repo.path)
    assert proc.returncode == 2
    assert "no plimsoll.yaml was found at the repository root of" in proc.stderr


def test_the_old_set_flag_is_accepted_with_one_deprecation_line(tmp_path: Path) -> None:
    repo = _keyed_harness(tmp_path, "key: {{file: {keyfile}}}")
    proc = checked_cli("history", "--set", "withheld.json", "--no-progress", cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "plimsoll-ci: warning: --set is deprecated; say --withheld withheld.json"]


def test_scan_of_paths_takes_the_set_and_key_from_plimsoll_yaml(tmp_path: Path) -> None:
    repo = _keyed_harness(tmp_path, "key: {{file: {keyfile}}}")
    proc = checked_cli("scan", "viewer", cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    assert "viewer/replay.html:4:" in proc.stdout and "seeds.txt:2" in proc.stdout


def test_ship_list_takes_ship_set_and_the_old_set_with_one_deprecation_line(
        tmp_path: Path) -> None:
    repo = _keyed_harness(tmp_path, "key: {{file: {keyfile}}}")
    new = checked_cli("ship", "list", "--ship-set", "task", cwd=repo.path)
    old = checked_cli("ship", "list", "--set", "task", cwd=repo.path)
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    assert new.stdout == old.stdout and "task\tviewer/replay.html" in new.stdout
    warnings = [ln for ln in old.stderr.splitlines() if "deprecated" in ln]
    assert warnings == ["plimsoll-ci: warning: --set is deprecated; say --ship-set task"]
    assert "deprecated" not in new.stderr


def _auditor_config(tmp_path: Path, limits: str) -> tuple[GitRepo, Path]:
    """A harness whose viewer leaks in its first bytes and runs past 1000 bytes, and an
    auditor's config outside it with the `limits:` lines given."""
    from kit.history import make_set

    make_set(tmp_path)
    config = tmp_path / "audit.yaml"
    config.write_text(f"withheld: withheld.json\nlimits:\n{limits}ship:\n  task:\n"
                      "    include: [\"viewer/**\"]\n")
    repo = GitRepo(tmp_path / "harness")
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json") + "<!-- padding -->\n" * 100)
    repo.commit("viewer: an example link", 0)
    return repo, config


def test_history_reads_a_configs_limits_as_the_scan_does_a_whole_number_written_as_float(
        tmp_path: Path) -> None:
    # YAML `1000.0` is a float: the scan takes it as 1000 bytes; history once handed the float
    # to the blob reader and stopped on a TypeError
    repo, config = _auditor_config(tmp_path, "  max_file_bytes: 1000.0\n")
    scan = checked_cli("scan", "--config", str(config), "--rev", "HEAD", cwd=repo.path)
    assert scan.returncode == 1 and "seeds.txt:2" in scan.stdout, scan.stderr
    proc = checked_cli("history", "--config", str(config), "--no-progress", "--no-cache",
                   cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    assert "seeds.txt:2: shipped" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_history_refuses_a_configs_memory_budget_the_scan_refuses(tmp_path: Path) -> None:
    repo, config = _auditor_config(tmp_path, "  max_memory: 1000\n")
    scan = checked_cli("scan", "--config", str(config), "--rev", "HEAD", cwd=repo.path)
    history = checked_cli("history", "--config", str(config), "--no-progress", "--no-cache",
                      cwd=repo.path)
    for proc in (scan, history):
        assert proc.returncode == 2, proc.stderr
        assert f"{config}: limits: max_memory 1000: a scan with" in proc.stderr
        assert proc.stdout == ""
