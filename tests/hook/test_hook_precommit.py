"""The hooks through the real `pre-commit` tool, pointed at this checkout.

pre-commit builds a virtual environment for the hooks (`language: python`) by pip-installing this
checkout at the commit named in the config, once per test session (PRE_COMMIT_HOME is a session
temp folder). The tests skip, saying why, when that install cannot reach a package index.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kit.harness_repo import (
    CHECKOUT,
    PRACTICE,
    SEED,
    commit,
    fix,
    git,
    hook_env,
    leak,
    make_harness,
)

pytestmark = pytest.mark.skipif(shutil.which("pre-commit") is None and
                                subprocess.run([sys.executable, "-m", "pre_commit", "--version"],
                                               capture_output=True).returncode != 0,
                                reason="pre-commit is not installed (pip install pre-commit)")

NETWORK_HINTS = ("No matching distribution", "Could not find a version", "NewConnectionError",
                 "Temporary failure in name resolution", "Network is unreachable")


def pre_commit(repo: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo,
                          capture_output=True, text=True, env=env)


_HEAD: list[str] = []


def checkout_head() -> str:
    """This checkout's HEAD, read once: every test installs the same hook environment."""
    if not _HEAD:
        _HEAD.append(git(CHECKOUT, "rev-parse", "HEAD"))
    return _HEAD[0]


@pytest.fixture(scope="session")
def pc_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pre-commit cache with this checkout's hook environment installed once."""
    home = tmp_path_factory.mktemp("pre-commit-home")
    probe = make_harness(tmp_path_factory.mktemp("probe"))
    _configure(probe)
    r = pre_commit(probe, "install-hooks", env=_env(home))
    if r.returncode != 0:
        log = r.stdout + r.stderr + _log(home)
        if any(h in log for h in NETWORK_HINTS):
            pytest.skip("pre-commit cannot install the hook environment: no package index "
                        "reachable (" + log.strip().splitlines()[-1][:200] + ")")
        pytest.fail("pre-commit install-hooks failed:\n" + log[-4000:])
    return home


def _log(home: Path) -> str:
    p = home / "pre-commit.log"
    return p.read_text() if p.exists() else ""


def _env(home: Path) -> dict:
    env = hook_env(PRE_COMMIT_HOME=str(home))
    env.pop("PRE_COMMIT_COLOR", None)
    env["PRE_COMMIT_COLOR"] = "never"
    return env


def _configure(repo: Path) -> None:
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n"
        f"-   repo: {CHECKOUT}\n"
        f"    rev: {checkout_head()}\n"
        f"    hooks:\n"
        f"    -   id: plimsoll-ship-scan\n"
        f"    -   id: plimsoll-withheld-guard\n")
    git(repo, "add", ".pre-commit-config.yaml")
    commit(repo, "pre-commit config")


@pytest.fixture
def installed(tmp_path: Path, pc_home: Path) -> tuple[Path, dict]:
    """A harness whose `git commit` and `git push` run the hooks from this checkout."""
    repo = make_harness(tmp_path)
    _configure(repo)
    env = _env(pc_home)
    r = pre_commit(repo, "install", "--hook-type", "pre-commit", "--hook-type", "pre-push",
                   env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return repo, env


def git_commit(repo: Path, message: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), "commit", "-m", message], capture_output=True,
                          text=True, env=env)


def test_manifest_validates() -> None:
    r = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                        str(CHECKOUT / ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_commit_naming_a_practice_seed_is_refused_and_the_fix_passes(installed) -> None:
    repo, env = installed
    before = git(repo, "rev-parse", "HEAD")
    leak(repo)
    git(repo, "add", "viewer/replay.html")
    r = git_commit(repo, "viewer: example replay link", env)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert git(repo, "rev-parse", "HEAD") == before
    assert "plimsoll ship scan" in out and "Failed" in out
    assert "viewer/replay.html:1:" in out and "seeds.txt:2" in out
    assert SEED not in out
    fix(repo)
    git(repo, "add", "viewer/replay.html")
    (repo / "viewer/app.mjs").write_text("export const speed = 3;\n")
    git(repo, "add", "viewer/app.mjs")
    r = git_commit(repo, "viewer: faster replay", env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert git(repo, "rev-parse", "HEAD") != before


def test_a_staged_leak_is_refused_while_the_working_tree_is_clean(installed) -> None:
    repo, env = installed
    leak(repo)
    git(repo, "add", "viewer/replay.html")
    fix(repo)  # only the index leaks
    r = git_commit(repo, "staged leak", env)
    assert r.returncode != 0 and "seeds.txt:2" in r.stdout + r.stderr


def test_a_clean_index_passes_while_the_working_tree_leaks(installed) -> None:
    repo, env = installed
    (repo / "viewer/app.mjs").write_text("export const speed = 4;\n")
    git(repo, "add", "viewer/app.mjs")
    leak(repo)  # unstaged: not part of this commit
    r = git_commit(repo, "clean index", env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert SEED in (repo / "viewer/replay.html").read_text()  # pre-commit restored it


def test_run_all_files_scans_what_is_already_committed(installed) -> None:
    repo, env = installed
    leak(repo)
    git(repo, "add", "-A")
    commit(repo, "leak committed with --no-verify")
    r = pre_commit(repo, "run", "plimsoll-ship-scan", "--all-files", env=env)
    assert r.returncode == 1 and "seeds.txt:2" in r.stdout, r.stdout + r.stderr


def test_pre_push_refuses_a_range_whose_middle_commit_leaks(installed) -> None:
    repo, env = installed
    base = git(repo, "rev-parse", "HEAD")
    leak(repo)
    git(repo, "add", "-A")
    middle = commit(repo, "viewer example link")
    fix(repo)
    git(repo, "add", "-A")
    tip = commit(repo, "rename the example")
    r = pre_commit(repo, "run", "plimsoll-ship-scan", "--hook-stage", "pre-push",
                   "--from-ref", base, "--to-ref", tip, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert middle[:12] in r.stdout and SEED not in r.stdout
    # And through a real `git push` to a bare remote.
    remote = repo.parent / "remote.git"
    git(repo.parent, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    subprocess.run(["git", "-C", str(repo), "push", "-q", "--no-verify", "origin",
                    f"{base}:refs/heads/main"], check=True, capture_output=True)
    r = subprocess.run(["git", "-C", str(repo), "push", "origin", "main"], capture_output=True,
                       text=True, env=env)
    assert r.returncode != 0 and middle[:12] in r.stdout + r.stderr


def test_try_repo_runs_this_checkouts_hook(tmp_path: Path, pc_home: Path) -> None:
    repo = make_harness(tmp_path)
    leak(repo)
    git(repo, "add", "-A")
    commit(repo, "leak")
    r = pre_commit(repo, "try-repo", str(CHECKOUT), "plimsoll-ship-scan", "--all-files",
                   env=_env(pc_home))
    out = r.stdout + r.stderr
    if r.returncode != 1 and any(h in out + _log(pc_home) for h in NETWORK_HINTS):
        pytest.skip("pre-commit try-repo cannot install the hook environment: no package index")
    assert r.returncode == 1, out
    assert "viewer/replay.html:1:" in out and "seeds.txt:2" in out and SEED not in out


def test_committing_the_seeds_file_is_refused_by_the_guard(installed) -> None:
    repo, env = installed
    (repo / "data").mkdir()
    (repo / "data/seeds.txt").write_text("\n".join(PRACTICE) + "\n")
    git(repo, "add", "data/seeds.txt")
    r = git_commit(repo, "keep the seeds handy", env)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "plimsoll withheld guard" in out
    assert "data/seeds.txt: 16 of its 16 lines are values of the withheld set" in out
    assert not any(v in out for v in PRACTICE)


RAW_COPIES = {
    "data/seeds.yaml": ("heldout:\n  seeds:\n" + "".join(f"  - {s}\n" for s in PRACTICE),
                        "YAML"),
    "data/seeds.json": ("[" + ", ".join(PRACTICE) + "]", "JSON"),  # one line
    "data/seeds.toml": ("seeds = [" + ", ".join(PRACTICE) + "]\n", "TOML"),
    "data/seeds.csv": ("flight,seed\n" + "".join(f"f{n},{s}\n" for n, s in enumerate(PRACTICE)),
                       "CSV"),
}


@pytest.mark.parametrize("name", sorted(RAW_COPIES))
def test_committing_a_structured_copy_of_the_seeds_is_refused_by_the_guard(installed,
                                                                          name) -> None:
    repo, env = installed
    text, kind = RAW_COPIES[name]
    (repo / "data").mkdir()
    (repo / name).write_text(text)
    git(repo, "add", name)
    before = git(repo, "rev-parse", "HEAD")
    r = git_commit(repo, "keep the seeds handy", env)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "plimsoll withheld guard" in out, out
    assert f"{name}: a {kind} file holding 16 of the 16 values of the withheld set" in out
    assert git(repo, "rev-parse", "HEAD") == before
    assert not any(v in out for v in PRACTICE)


def test_a_first_push_with_the_root_commit_scans_every_new_commit(installed) -> None:
    repo, env = installed
    leak(repo)
    git(repo, "add", "-A")
    middle = commit(repo, "viewer example link")
    fix(repo)
    git(repo, "add", "-A")
    commit(repo, "rename the example")
    remote = repo.parent / "empty.git"
    git(repo.parent, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "empty", str(remote))
    # pre-commit runs pre-push with all files here (no FROM ref): the hook still walks the commits.
    r = subprocess.run(["git", "-C", str(repo), "push", "empty", "main"], capture_output=True,
                       text=True, env=env)
    assert r.returncode != 0 and middle[:12] in r.stdout + r.stderr, r.stdout + r.stderr


def _copy_example(tmp_path: Path) -> Path:
    """A copy of examples/argon as a maintainer would start from it: its own repository, its
    `.pre-commit-config.yaml` pointed at this checkout (the published repository otherwise)."""
    import re

    repo = tmp_path / "argon"
    shutil.copytree(CHECKOUT / "examples" / "argon", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "maintainer@example.org")
    git(repo, "config", "user.name", "Maintainer")
    git(repo, "config", "commit.gpgsign", "false")
    cfg = (repo / ".pre-commit-config.yaml").read_text()
    cfg = re.sub(r"repo: \S+", f"repo: {CHECKOUT}", cfg)
    cfg = re.sub(r"rev: \S+", f"rev: {checkout_head()}", cfg)
    (repo / ".pre-commit-config.yaml").write_text(cfg)
    git(repo, "add", "-A")
    commit(repo, "harness from the example")
    return repo


def test_the_bundled_example_passes_every_hook_it_recommends_but_its_planted_leak(
        tmp_path: Path, pc_home: Path) -> None:
    from plimsoll_ci.commands.demo import EXAMPLE_KEY

    repo = _copy_example(tmp_path)
    hooks = (repo / ".pre-commit-config.yaml").read_text()
    assert "id: plimsoll-ship-scan" in hooks and "id: plimsoll-withheld-guard" in hooks
    env = {**_env(pc_home), "PLIMSOLL_WITHHELD_KEY": EXAMPLE_KEY}
    r = pre_commit(repo, "run", "--all-files", env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "plimsoll withheld guard (no guessable set, no raw values)" in out
    guard = next(ln for ln in out.splitlines() if ln.startswith("plimsoll withheld guard"))
    assert guard.endswith("Passed"), out
    # the only finding is the one the example plants: the viewer's example link, reported once
    # though the builder ships a copy of it too
    findings = sorted(ln for ln in out.splitlines() if ": withheld " in ln)
    assert findings == ["task/viewer/replay.html:7:36: withheld value seeds.txt:2 (ship sets "
                        "drone, viewer; also shipped as drone:viewer/replay.html)"], out
    viewer = repo / "task" / "viewer" / "replay.html"
    viewer.write_text(viewer.read_text().replace(f"seed-{SEED}.json", "seed-EXAMPLE.json"))
    git(repo, "add", "-A")
    r = pre_commit(repo, "run", "--all-files", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("Passed") == 2, r.stdout


def test_the_guard_says_a_missing_key_once_under_run_all_files(installed) -> None:
    repo, env = installed
    env = {k: v for k, v in env.items() if k != "PLIMSOLL_WITHHELD_KEY"}
    for i in range(40):  # enough files for pre-commit to split a parallel hook's file list
        (repo / "tasks" / f"note{i}.md").write_text(f"note {i}\n")
    git(repo, "add", "-A")
    commit(repo, "notes")
    r = pre_commit(repo, "run", "plimsoll-withheld-guard", "--all-files", env=env)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "exit code: 2" in out, out
    assert out.count("PLIMSOLL_WITHHELD_KEY: the environment variable is not set") == 1, out


def test_a_baseline_in_the_hooks_args_lets_a_dealt_with_finding_be_committed(
        tmp_path: Path, pc_home: Path) -> None:
    """`args: [--baseline, baseline.json]` under the hook, through real pre-commit: the
    baselined finding is named and fails nothing; without the baseline the commit is refused."""
    from kit.harness_repo import repo_cli

    repo = make_harness(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n"
        f"-   repo: {CHECKOUT}\n"
        f"    rev: {checkout_head()}\n"
        f"    hooks:\n"
        f"    -   id: plimsoll-ship-scan\n"
        f"        args: [--baseline, baseline.json]\n")
    leak(repo)
    r = repo_cli(repo, "scan", "--format", "json", "-o", str(tmp_path / "report.json"))
    assert r.returncode == 1, r.stderr
    r = repo_cli(repo, "baseline", str(tmp_path / "report.json"), "--reason",
                "rotated on 2026-12-01", "-o", "baseline.json")
    assert r.returncode == 0, r.stderr
    git(repo, "add", "-A")
    env = _env(pc_home)
    assert pre_commit(repo, "install", env=env).returncode == 0
    r = git_commit(repo, "viewer: example link, the seed rotated", env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = pre_commit(repo, "run", "plimsoll-ship-scan", "--all-files", "--verbose", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "note: baselined: viewer/replay.html:1:15: withheld value seeds.txt:2" in r.stdout
    assert "1 baselined finding not counted (baseline.json)" in r.stdout
    assert SEED not in r.stdout + r.stderr
    (repo / "baseline.json").write_text('{"format": "plimsoll-baseline/1", "entries": [\n  {}\n]}\n')
    git(repo, "add", "baseline.json")
    r = pre_commit(repo, "run", "plimsoll-ship-scan", "--all-files", env=env)
    assert r.returncode == 2 or "exit code: 2" in r.stdout, r.stdout + r.stderr
    assert "baseline baseline.json line 2:" in r.stdout


def test_a_yaml_seeded_harness_set_up_by_init_refuses_the_leak_and_the_raw_seeds(
        tmp_path: Path, pc_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`plimsoll-ci init` on a harness whose seeds live in YAML: its hooks (pointed at this
    checkout: the release it pins cannot be fetched here) refuse the viewer leak and the raw
    seeds file, and let the clean commit through."""
    from plimsoll_ci import __version__, init
    from plimsoll_ci.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    repo = tmp_path / "harness"
    (repo / "heldout").mkdir(parents=True)
    (repo / "heldout" / "seeds.yaml").write_text(
        "heldout:\n  seeds:\n" + "".join(f"    - {s}\n" for s in PRACTICE))
    (repo / "viewer").mkdir()
    fix(repo)
    git(repo, "init", "-q", "-b", "main")
    for k, v in (("user.email", "m@example.org"), ("user.name", "M"), ("commit.gpgsign", "false")):
        git(repo, "config", k, v)
    assert main(["init", str(repo), "--yes"]) == 0
    config = repo / ".pre-commit-config.yaml"
    config.write_text(config.read_text().replace(init.HOOKS_REPO, str(CHECKOUT))
                      .replace(f"rev: v{__version__}", f"rev: {checkout_head()}"))
    env = _env(pc_home)
    r = pre_commit(repo, "install", "--hook-type", "pre-commit", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    git(repo, "add", "-A")
    assert "heldout/seeds.yaml" not in git(repo, "diff", "--cached", "--name-only")
    first = git_commit(repo, "plimsoll-ci init", env)
    assert first.returncode == 0, first.stdout + first.stderr
    leak(repo)
    git(repo, "add", "viewer/replay.html")
    r = git_commit(repo, "viewer: example replay link", env)
    assert r.returncode != 0 and "heldout/seeds.yaml:heldout.seeds[1]" in r.stdout + r.stderr
    assert SEED not in r.stdout + r.stderr
    fix(repo)
    git(repo, "add", "viewer/replay.html")
    git(repo, "add", "-f", "heldout/seeds.yaml")
    r = git_commit(repo, "keep the seeds", env)
    assert r.returncode != 0 and "heldout/seeds.yaml" in r.stdout + r.stderr
    assert all(s not in r.stdout + r.stderr for s in PRACTICE)
